// Binding named tensors to the shapes an architecture expects. Every check happens here, at
// load time, so the forward pass can trust its weights: names present, dims exact, types
// computable, byte sizes consistent.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "kernels/weight_view.h"
#include "model/tensor_source.h"

namespace pagoda::model {

class WeightBinder {
 public:
  explicit WeightBinder(const TensorSource& source) : source_(source) {}

  bool has(const std::string& name) const { return source_.find(name) != nullptr; }

  // A [rows, cols] matrix (ggml dims {cols, rows}).
  Result<kernels::WeightView> matrix(const std::string& name, int64_t rows, int64_t cols) const;

  // A stacked [num, rows, cols] tensor (ggml dims {cols, rows, num}) as `num` matrices.
  Result<std::vector<kernels::WeightView>> matrices(const std::string& name, int64_t num,
                                                    int64_t rows, int64_t cols) const;

  // A 1-D vector of n elements, converted to f32 (norm weights, biases).
  Result<std::vector<float>> vector(const std::string& name, int64_t n) const;

 private:
  Result<const TensorRef*> lookup(const std::string& name, int32_t n_dims,
                                  const int64_t* dims) const;
  const TensorSource& source_;
};

}  // namespace pagoda::model
