// Conversions between f32 and every tensor type pagoda loads, bit-exact with ggml's block
// layouts (ggml-common.h) and reference routines (dequantize_row_* / quantize_row_*_ref).
#pragma once

#include <cstdint>

#include "kernels/weight_view.h"
#include "tensor/dtype.h"

namespace pagoda::kernels {

// True if dequantize_row supports `dtype`.
bool can_dequantize(tensor::DType dtype);
// True if quantize_row supports `dtype` (the types `pagoda quantize` writes).
bool can_quantize(tensor::DType dtype);

// dst[0..n) = the values encoded at src. precondition: can_dequantize(dtype),
// n % block_size(dtype) == 0, src holds row_size_bytes(dtype, n) bytes.
void dequantize_row(tensor::DType dtype, const void* src, float* dst, int64_t n);

// Encodes src[0..n) into dst. precondition: can_quantize(dtype), n % block_size == 0.
// Matches ggml's *_ref quantizers (no importance matrix).
void quantize_row(tensor::DType dtype, const float* src, void* dst, int64_t n);

// out[0..w.cols) = row r of the matrix w stands for, in input order: dequantised, plus its zero
// term, and put back in file order when w has an input order (weight_view.h). `scratch` holds
// w.cols floats (used when w.input_order is set; may be null otherwise).
void dequantize_weight_row(const WeightView& w, int64_t r, float* out, float* scratch);

}  // namespace pagoda::kernels
