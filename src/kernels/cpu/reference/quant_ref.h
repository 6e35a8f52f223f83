// Scalar reference (de)quantisers, one pair per tensor type. These define correctness: every
// SIMD path is tested against them, and they reproduce ggml's dequantize_row_* and
// quantize_row_*_ref bit for bit (same block layouts, same float operation order).
// All take n = number of elements, a multiple of the type's block size; `src`/`dst` blocks may
// be at any address.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace pagoda::kernels::cpu::reference {

// Type-dispatched entry points (precondition: the type is one listed below).
void dequantize_row(tensor::DType dtype, const void* src, float* dst, int64_t n);
void quantize_row(tensor::DType dtype, const float* src, void* dst, int64_t n);

// Plain types (quant_float.cc). F16/BF16 encode with round-to-nearest-even.
void dequantize_row_f32(const void* src, float* dst, int64_t n);
void dequantize_row_f16(const void* src, float* dst, int64_t n);
void dequantize_row_bf16(const void* src, float* dst, int64_t n);
void quantize_row_f32(const float* src, void* dst, int64_t n);
void quantize_row_f16(const float* src, void* dst, int64_t n);
void quantize_row_bf16(const float* src, void* dst, int64_t n);

// 32-element legacy blocks (quant_legacy.cc).
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);

// 256-element K-quant super-blocks (quant_k.cc).
void dequantize_row_q2_k(const void* src, float* dst, int64_t n);
void dequantize_row_q3_k(const void* src, float* dst, int64_t n);
void dequantize_row_q4_k(const void* src, float* dst, int64_t n);
void dequantize_row_q5_k(const void* src, float* dst, int64_t n);
void dequantize_row_q6_k(const void* src, float* dst, int64_t n);
void quantize_row_q2_k(const float* src, void* dst, int64_t n);
void quantize_row_q3_k(const float* src, void* dst, int64_t n);
void quantize_row_q4_k(const float* src, void* dst, int64_t n);
void quantize_row_q5_k(const float* src, void* dst, int64_t n);
void quantize_row_q6_k(const float* src, void* dst, int64_t n);

}  // namespace pagoda::kernels::cpu::reference
