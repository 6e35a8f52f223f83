// Scalar reference implementations of the op fronts in kernels/ops.h and kernels/attention.h.
// Same contracts as the fronts (which check shapes and then dispatch); these are the ground
// truth every SIMD path is tested against, written for clarity and numerical care (double
// accumulation where it is cheap) rather than speed.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/attention.h"
#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/weight_view.h"

namespace pagoda::kernels::cpu::reference {

// Activation conversion to the vec-dot type (bit-exact with ggml's quantize_row_q8_*_ref).
void quantize_act_row(const ActLayout& l, const float* x, uint8_t* dst);
void quantize_acts(const ActLayout& l, const float* x, int64_t m, uint8_t* dst);
// One weight row (GGUF bytes of type t, n elements) times one converted activation row; the
// float operation order every SIMD path reproduces (vec_dot_ref.cc).
float vec_dot(tensor::DType t, const uint8_t* w, const ActRow& x, int64_t n);
// MatmulRowsFn (kernel_table.h) built from vec_dot.
void matmul_rows(const WeightView& w, const ActLayout& l, const uint8_t* acts, int64_t m,
                 const float* bias, float* y, int64_t ldy, int64_t r0, int64_t r1);
void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out);

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y);
void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
          const int32_t* positions, const RopeParams& params);
void silu_mul(const float* gate, const float* up, int64_t n, float* out);
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);
void softcap(float* x, int64_t n, float cap);
void softmax(float* x, int64_t rows, int64_t dim);
void add_inplace(float* y, const float* x, int64_t n);
void weighted_row_sum(const float* src, const int32_t* index, const float* weights, int64_t rows,
                      int64_t k, int64_t dim, float* out);
// head_matmul (ops.h) for heads [h0, h1).
void head_matmul(const float* w, int64_t h0, int64_t h1, int64_t in_dim, int64_t out_dim,
                 const float* x, HeadRows xs, int64_t num_tokens, float* y, HeadRows ys);
// lora_expand (ops.h) of one job for columns [c0, c1) (lora_expand.cc).
void lora_expand(const WeightView& bt, const float* mid, int64_t rows, const int32_t* index,
                 float* y, int64_t ldy, int64_t c0, int64_t c1);
// The sum of p[0, n) mod 2^64 (the bandwidth probe's read loop).
uint64_t sum_u64(const uint64_t* p, size_t n);

// f16_row: converts an f16 cache row (nullptr: quantize_row_f16; an ISA's faster equal one).
void kv_cache_write(const KvLayerView& kv, std::span<const int32_t> block_table,
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v,
                    void (*f16_row)(const float* src, void* dst, int64_t n) = nullptr);
// The attention math of kernels/attention.h for one work item (attention_ref.cc).
void attention_item(const AttentionItem& item, const KvLayerView& kv,
                    const AttentionParams& params);

}  // namespace pagoda::kernels::cpu::reference
