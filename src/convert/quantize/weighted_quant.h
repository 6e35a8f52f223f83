// Weighted block quantisers: encode a row into a GGUF block type minimising
// Σ_i w_i (x_i - x̂_i)² instead of rounding to nearest, the way llama.cpp uses an importance
// matrix. Per llama.cpp's choice the weight of element i is imp_i · sqrt(σ² + x_i²), with imp the
// importance of its input column (mean squared activation, format/imatrix_file.h) and σ² the
// row's mean square. Each scale is chosen among 19 candidates around the round-to-nearest one
// (and, for the sub-blocks of Q2_K/Q4_K/Q5_K, which have a min, 21 of the range), refitted by
// weighted least squares for the levels each candidate gives; the super-block scales of the
// K-quants are then quantised as the reference does. Per block, the reference round-to-nearest
// encoding is kept instead when its weighted error is lower, so the result is never worse than RTN
// under the weights. Output bytes are the standard ggml block layouts (ggml-common.h), read back
// with kernels::dequantize_row.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace pagoda::convert {

// True for the types quantize_row_weighted encodes with weights: Q4_0, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K.
bool supports_weighted(tensor::DType type);

// Encodes x[0..n) into dst with per-element weights w[0..n) (> 0; see element_weights).
// precondition: supports_weighted(type), n % block_size(type) == 0.
void quantize_row_weighted(tensor::DType type, const float* x, const float* w, void* dst,
                           int64_t n);

// w[i] = importance[i] · sqrt(σ² + x[i]²), σ² = mean(x²) (llama.cpp's weighting), with a floor
// so that no weight is 0.
void element_weights(const float* x, const float* importance, int64_t n, float* w);

// One block of n <= 256 values on symmetric levels L in [-nmax, nmax - 1] (x ≈ d·L), the scale
// minimising Σ w (x - d·L)² among the candidates. Returns d (not rounded to f16); writes L.
float fit_symmetric(const float* x, const float* w, int n, int nmax, int* L);

}  // namespace pagoda::convert
