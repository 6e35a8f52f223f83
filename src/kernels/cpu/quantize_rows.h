// Converting an input's rows, gathered by index, into a matmul's activation layout: shared by the
// grouped matmul front (kernels/ops.cc) and the LoRA op (kernels/lora_expand.cc).
#pragma once

#include <cstdint>

#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/kernel_table.h"

namespace pagoda::kernels::cpu {

// Rows [a, b) of an input converted by k.quantize_acts into dst (rows l.row_bytes apart): x's
// rows rows[i] (cols floats each), or with rows == nullptr x's rows a..b (in one call).
inline void quantize_rows(const CpuKernels& k, const ActLayout& l, const float* x,
                          const int32_t* rows, int64_t cols, int64_t a, int64_t b, uint8_t* dst) {
  if (rows == nullptr) {
    k.quantize_acts(l, x + a * cols, b - a, dst);
    return;
  }
  for (int64_t i = a; i < b; ++i, dst += l.row_bytes)
    k.quantize_acts(l, x + static_cast<int64_t>(rows[i]) * cols, 1, dst);
}

}  // namespace pagoda::kernels::cpu
