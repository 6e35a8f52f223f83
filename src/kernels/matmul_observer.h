// MatmulObserver: a process-wide hook that sees the input activations of every matmul, for the
// offline tools that need them (the importance matrix of `pagoda imatrix`, the Hessians of GPTQ
// and AWQ). Off (null) by default: the forward pass then pays one relaxed atomic load per matmul.
// The observer is called once per weight and call, on one thread (the team's first, after the
// barrier that makes x complete), before the matmul reads x; it must not write x.
#pragma once

#include <cstdint>

#include "kernels/weight_view.h"

namespace pagoda::kernels {

class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // x: [m, w.cols] f32, the rows about to be multiplied by wᵀ.
  virtual void observe(const WeightView& w, const float* x, int64_t m) = 0;
};

// Installs `observer` (nullptr: none). Not for use while a forward pass runs.
void set_matmul_observer(MatmulObserver* observer);
MatmulObserver* matmul_observer();

}  // namespace pagoda::kernels
