// Reference conversions for the plain float types (F32, F16, BF16) and the type-dispatched
// reference entry points.
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/reference/quant_ref.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {

void dequantize_row_f32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void dequantize_row_f16(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    dst[i] = tensor::fp16_to_fp32(h);
  }
}

void dequantize_row_bf16(const void* src, float* dst, int64_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    dst[i] = tensor::bf16_to_fp32(h);
  }
}

void quantize_row_f32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void quantize_row_f16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = tensor::fp32_to_fp16(src[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void quantize_row_bf16(const float* src, void* dst, int64_t n) {
  auto* p = static_cast<uint8_t*>(dst);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = tensor::fp32_to_bf16(src[i]);
    std::memcpy(p + 2 * i, &h, 2);
  }
}

void dequantize_row(tensor::DType dtype, const void* src, float* dst, int64_t n) {
  using tensor::DType;
  switch (dtype) {
    case DType::kF32:
      return dequantize_row_f32(src, dst, n);
    case DType::kF16:
      return dequantize_row_f16(src, dst, n);
    case DType::kBF16:
      return dequantize_row_bf16(src, dst, n);
    case DType::kQ4_0:
      return dequantize_row_q4_0(src, dst, n);
    case DType::kQ4_1:
      return dequantize_row_q4_1(src, dst, n);
    case DType::kQ5_0:
      return dequantize_row_q5_0(src, dst, n);
    case DType::kQ5_1:
      return dequantize_row_q5_1(src, dst, n);
    case DType::kQ8_0:
      return dequantize_row_q8_0(src, dst, n);
    case DType::kQ2_K:
      return dequantize_row_q2_k(src, dst, n);
    case DType::kQ3_K:
      return dequantize_row_q3_k(src, dst, n);
    case DType::kQ4_K:
      return dequantize_row_q4_k(src, dst, n);
    case DType::kQ5_K:
      return dequantize_row_q5_k(src, dst, n);
    case DType::kQ6_K:
      return dequantize_row_q6_k(src, dst, n);
    default:
      break;
  }
  PAGODA_CHECK_MSG(false, "dequantize_row: unsupported type");
}

void quantize_row(tensor::DType dtype, const float* src, void* dst, int64_t n) {
  using tensor::DType;
  switch (dtype) {
    case DType::kF32:
      return quantize_row_f32(src, dst, n);
    case DType::kF16:
      return quantize_row_f16(src, dst, n);
    case DType::kBF16:
      return quantize_row_bf16(src, dst, n);
    case DType::kQ4_0:
      return quantize_row_q4_0(src, dst, n);
    case DType::kQ4_1:
      return quantize_row_q4_1(src, dst, n);
    case DType::kQ5_0:
      return quantize_row_q5_0(src, dst, n);
    case DType::kQ5_1:
      return quantize_row_q5_1(src, dst, n);
    case DType::kQ8_0:
      return quantize_row_q8_0(src, dst, n);
    case DType::kQ2_K:
      return quantize_row_q2_k(src, dst, n);
    case DType::kQ3_K:
      return quantize_row_q3_k(src, dst, n);
    case DType::kQ4_K:
      return quantize_row_q4_k(src, dst, n);
    case DType::kQ5_K:
      return quantize_row_q5_k(src, dst, n);
    case DType::kQ6_K:
      return quantize_row_q6_k(src, dst, n);
    default:
      break;
  }
  PAGODA_CHECK_MSG(false, "quantize_row: unsupported type");
}

}  // namespace pagoda::kernels::cpu::reference
