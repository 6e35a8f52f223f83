// Op fronts for (de)quantisation: check the preconditions, then run the selected kernel. Only the
// scalar reference exists so far; ISA-specific paths will be chosen here at startup.
#include "kernels/quant.h"

#include <algorithm>

#include "base/check.h"
#include "kernels/cpu/reference/quant_ref.h"

namespace pagoda::kernels {

bool can_dequantize(tensor::DType dtype) {
  using tensor::DType;
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

bool can_quantize(tensor::DType dtype) {
  return can_dequantize(dtype);
}

void dequantize_row(tensor::DType dtype, const void* src, float* dst, int64_t n) {
  PAGODA_CHECK(can_dequantize(dtype));
  PAGODA_CHECK(n >= 0 && n % tensor::dtype_info(dtype).block_size == 0);
  cpu::reference::dequantize_row(dtype, src, dst, n);
}

void quantize_row(tensor::DType dtype, const float* src, void* dst, int64_t n) {
  PAGODA_CHECK(can_quantize(dtype));
  PAGODA_CHECK(n >= 0 && n % tensor::dtype_info(dtype).block_size == 0);
  cpu::reference::quantize_row(dtype, src, dst, n);
}

void dequantize_weight_row(const WeightView& w, int64_t r, float* out, float* scratch) {
  PAGODA_CHECK(r >= 0 && r < w.rows && (w.input_order == nullptr || scratch != nullptr));
  float* stored = w.input_order != nullptr ? scratch : out;
  dequantize_row(w.dtype, w.row(r), stored, w.cols);
  for (int64_t g = 0; g < w.zero_groups(); ++g) {
    const float z = w.zero_term[g * w.zero_stride + r];
    for (int64_t j = g * w.zero_group; j < std::min(w.cols, (g + 1) * w.zero_group); ++j)
      stored[j] += z;
  }
  for (int64_t j = 0; w.input_order != nullptr && j < w.cols; ++j)
    out[w.input_order[j]] = stored[j];
}

}  // namespace pagoda::kernels
