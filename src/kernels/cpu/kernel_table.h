// CpuKernels: the table of kernel entry points one ISA path provides. The op fronts
// (kernels/ops.cc, kernels/attention.cc) check shapes, split work across threads and call the
// active table; an entry an ISA lacks falls back to the scalar reference.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kernels/attention.h"
#include "kernels/cpu/act_layout.h"
#include "kernels/isa.h"
#include "kernels/weight_view.h"

namespace pagoda::kernels::cpu {

// For weight rows r in [r0, r1) and tokens i < m: y[i * ldy + r] = w_r · act_i (+ bias[r]), where
// act_i is row i of `acts` (m rows of layout l, l.row_bytes apart; l matches w.dtype's vec-dot type
// and l.n == w.cols). Each output depends only on its weight row and activation row, never on m,
// r0 or r1 (the contract that makes batched == alone).
using MatmulRowsFn = void (*)(const WeightView& w, const ActLayout& l, const uint8_t* acts,
                              int64_t m, const float* bias, float* y, int64_t ldy, int64_t r0,
                              int64_t r1);

// One unit of attention work: the query heads of KV head `kv_head` (n_heads / n_kv_heads of them)
// for tokens [0, num_tokens) of one sequence, starting at these pointers (q/out rows are
// [n_heads, head_dim] per token). The math is attention.h's.
struct AttentionItem {
  const float* q = nullptr;
  float* out = nullptr;
  const int32_t* positions = nullptr;
  int64_t num_tokens = 0;
  int32_t kv_head = 0;
  std::span<const int32_t> block_table;
};

// Without CpuKernels::decode_tokens: the tokens up to which a matmul counts as a decode.
constexpr int64_t kDecodeTokens = 3;

struct CpuKernels {
  Isa isa = Isa::kScalar;
  // Converts m rows of x (l.n floats each, contiguous) into dst (rows l.row_bytes apart).
  void (*quantize_acts)(const ActLayout& l, const float* x, int64_t m, uint8_t* dst) = nullptr;
  // Optional: a second form of m converted rows that the ISA's GEMMs read faster (AVX-512 VNNI:
  // Q8_0 rows of 8 tokens interleaved). group_acts_bytes: its size for m rows of layout l when
  // matmul_rows for weight w would read it (a multiple of 64; 0: w's kernel would not, or none
  // for this layout and m). group_acts: writes part `part` of `parts` of it from the m rows at
  // `rows` into dst. The op front places it right after the rows and sets ActLayout::grouped;
  // matmul_rows reads it only then.
  size_t (*group_acts_bytes)(const WeightView& w, const ActLayout& l, int64_t m) = nullptr;
  void (*group_acts)(const ActLayout& l, const uint8_t* rows, int64_t m, int part, int parts,
                     uint8_t* dst) = nullptr;
  // Whether matmul_rows reads WeightView::packed (cpu/packed_layout.h) when it is set.
  bool reads_packed = false;
  // The matmul kernel for a weight type, or nullptr for "use the reference".
  MatmulRowsFn (*matmul_rows)(tensor::DType weight) = nullptr;
  // The most tokens for which the op front splits a matmul over weight w as it does a decode's,
  // at least 1: each thread one contiguous share of the rows (one stream through the weight,
  // which matmul_rows reads once from memory), then shrinking tail pieces, rather than the small
  // chunks it deals out to compute-bound batches, which cut those streams short. nullptr:
  // kDecodeTokens.
  int64_t (*decode_tokens)(const WeightView& w) = nullptr;
  // Attention for one item (see attention.h for the math). nullptr: use the reference.
  void (*attention_item)(const AttentionItem& item, const KvLayerView& kv,
                         const AttentionParams& params) = nullptr;
  // Σ p[i] for i < n (wrapping), read with the ISA's widest loads and several accumulators: the
  // fastest streaming read, for the memory bandwidth measurement. nullptr: a plain loop.
  uint64_t (*sum_u64)(const uint64_t* p, size_t n) = nullptr;
  // out[i] = silu(gate[i]) * up[i] (softmax_exp.h's silu, bit for bit). nullptr: the reference.
  void (*silu_mul)(const float* gate, const float* up, int64_t n, float* out) = nullptr;
  // rms_norm of `rows` rows (sum_squares.h's Σx² order, bit for bit). nullptr: the reference.
  void (*rms_norm)(const float* x, const float* weight, int64_t rows, int64_t dim, float eps,
                   float* y) = nullptr;
  // y[i] += x[i]. nullptr: the reference.
  void (*add_inplace)(float* y, const float* x, int64_t n) = nullptr;
  // kernels::lora_expand (ops.h) for columns [c0, c1) of one job, bit for bit the reference's
  // (std::fma per k in order onto 0, then one add to y). nullptr: the reference.
  void (*lora_expand)(const WeightView& bt, const float* mid, int64_t rows, const int32_t* index,
                      float* y, int64_t ldy, int64_t c0, int64_t c1) = nullptr;
  // n floats to f16 bits, tensor::fp32_to_fp16 per element bit for bit (NaN: the quiet NaN of its
  // sign, no payload): the f16 KV cache's row store. nullptr: the reference.
  void (*fp32_to_f16_row)(const float* src, void* dst, int64_t n) = nullptr;
};

// The table for `isa`, or nullptr if this build does not contain that path.
const CpuKernels* kernels_for(Isa isa);
// The table of kernels::active_isa().
const CpuKernels& active_kernels();

const CpuKernels* reference_kernels();
const CpuKernels* portable_kernels();  // Highway's static target (cpu/portable/)
const CpuKernels* avx2_kernels();      // nullptr off x86-64
const CpuKernels* avx512_kernels();    // nullptr off x86-64
const CpuKernels* amx_kernels();       // avx512's with the AMX GEMMs; nullptr off x86-64

}  // namespace pagoda::kernels::cpu
