// Op fronts for (de)quantisation: check the preconditions, then run the selected kernel. Only the
// scalar reference exists so far; ISA-specific paths will be chosen here at startup.
#include "kernels/quant.h"

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

}  // namespace pagoda::kernels
