// Scalar reference implementations of the op fronts in kernels/ops.h and kernels/attention.h.
// Same contracts as the fronts (which check shapes and then dispatch); these are the ground
// truth every SIMD path is tested against, written for clarity and numerical care (double
// accumulation where it is cheap) rather than speed.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/weight_view.h"

namespace pagoda::kernels::cpu::reference {

// Each weight row is dequantised once and dotted with every x row in double; OpenMP splits the
// output rows (deterministic: one thread computes each output in a fixed order).
void matmul(const WeightView& w, const float* x, int64_t m, float* y, const float* bias);
void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out);

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y);
void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
          const int32_t* positions, const RopeParams& params);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void softmax(float* x, int64_t rows, int64_t dim);
void add_inplace(float* y, const float* x, int64_t n);

void kv_cache_write(const KvLayerView& kv, std::span<const int32_t> block_table,
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v);
void paged_attention(const float* q, int64_t num_tokens, const int32_t* positions,
                     const KvLayerView& kv, std::span<const int32_t> block_table,
                     const AttentionParams& params, float* out);

}  // namespace pagoda::kernels::cpu::reference
