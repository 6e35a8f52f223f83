// Op fronts: shape contracts for the CPU kernels. Activations are f32, row-major.
// Each function dispatches to the best ISA path selected at startup (see kernels/cpu/) and splits
// its work across the kernel threads: on the caller's team inside kernels::run_in_team (team.h:
// every thread of the team makes the call), else in a parallel region of its own.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "kernels/weight_view.h"

namespace pagoda::kernels {

// y[m, w.rows] = x[m, w.cols] · wᵀ (+ bias[w.rows] when bias != nullptr). w.dtype: any type
// can_dequantize accepts; w.row_bytes == row_size_bytes(w.dtype, w.cols).
// Each output row's value depends only on its own x row (never on m): batched == alone.
void matmul(const WeightView& w, const float* x, int64_t m, float* y, const float* bias = nullptr);

// Bytes of the active ISA's pre-packed copy of w (cpu/packed_layout.h), or 0 when its kernels
// have no packed layout for w.dtype (or PAGODA_PACK=0 turns packing off).
size_t packed_size(const WeightView& w);
// Writes that copy (packed_size(w) > 0 bytes) to dst. To use it, set w.packed = dst and keep the
// memory alive while w is used; matmul results are bit-identical either way.
void pack_weight(const WeightView& w, uint8_t* dst);
// The same copy in a vector (empty when packed_size(w) is 0).
std::vector<uint8_t> pack_weight(const WeightView& w);

// One matmul of a group sharing its input (e.g. the Q, K and V projections, or gate and up).
struct MatmulJob {
  const WeightView* w = nullptr;  // [rows, cols]
  float* y = nullptr;             // [m, w->rows]
  const float* bias = nullptr;    // [w->rows] or nullptr
};

// y_j = x · w_jᵀ (+ bias_j) for every job: the same results as one matmul call per job, with x
// converted once per vec-dot type and every job's rows split across the threads in one go (one
// set of barriers). precondition: all w_j->cols equal.
void matmul_group(std::span<const MatmulJob> jobs, const float* x, int64_t m);

// Grouped matmuls (mixture-of-experts layers: every expert's weights times the rows routed to it).
// One input: m rows of the jobs' `cols` floats, gathered from x by index (row i is x[rows[i] *
// cols, +cols)) or, with rows == nullptr, x's first m rows.
struct GroupedInput {
  const float* x = nullptr;
  const int32_t* rows = nullptr;  // [m] or nullptr
  int64_t m = 0;
};
// One weight over one input: y[inputs[input].m, w->rows] (no bias).
struct GroupedJob {
  const WeightView* w = nullptr;
  int32_t input = 0;
  float* y = nullptr;
};

// y_j = x_{input_j} · w_jᵀ for every job: the same bits as matmul(*w_j, the input's rows, m, y_j)
// per job, in one step (matmul_group's): each input's rows converted once per vec-dot type, input
// order and zero group (GPTQ/AWQ experts, weight_view.h) by all threads, then the threads take
// 64-row pieces of every job in turn (each + its zero term), so many experts run in one parallel
// step with two or three barriers rather than several per expert. Inputs with m = 0 cost nothing.
// precondition: every w_j->cols equal; 0 <= input_j < inputs.size(); index rows in range.
void matmul_grouped(std::span<const GroupedInput> inputs, std::span<const GroupedJob> jobs);

// out[r, :] = Σ_{j<k} weights[r·k + j] · src[index[r·k + j], :] for r < rows, the terms added in
// order j onto 0; an index < 0 adds nothing (MoE's combine: each token's weighted expert outputs,
// an expert held by another rank skipped). precondition: every index < the rows of src.
void weighted_row_sum(const float* src, const int32_t* index, const float* weights, int64_t rows,
                      int64_t k, int64_t dim, float* out);

// Embedding lookup: out[i, :] = dequantised row ids[i] of `table`, out: [n, table.cols] f32.
// precondition: 0 <= ids[i] < table.rows (validate untrusted token ids before calling).
void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out);

// y[r, :] = x[r, :] / sqrt(mean(x[r, :]²) + eps) * weight   for r in [0, rows). y may alias x.
void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y);

enum class RopeStyle {
  kInterleaved,  // pairs (2i, 2i+1): GGUF llama (q/k permuted at conversion)
  kNeox,         // pairs (i, i + d/2): qwen2, HF rotate-half
};

// Angles follow ggml's rope exactly, including its float recurrence theta_i = pos ·
// base^(-2i/rot_dims) computed by repeated multiplication, and its YaRN correction (rope_yarn).
struct RopeParams {
  RopeStyle style = RopeStyle::kInterleaved;
  int32_t rot_dims = 0;      // dims rotated per head (== head_dim for these archs)
  float theta_base = 10000;  // rope.freq_base
  float freq_scale = 1;      // 1 / linear scaling factor
  // Optional per-pair divisors (Llama-3 rope_freqs.weight), rot_dims/2 entries, or empty.
  std::span<const float> freq_factors;
  // YaRN: with ext_factor != 0, pair i's angle mixes the interpolated (freq_scale · θ) and the
  // extrapolated (θ) angle by ramp(i) · ext_factor, where ramp is 1 below corr_dims[0] and falls
  // linearly to 0 at corr_dims[1], and cos/sin are scaled by attn_factor · (1 + 0.1 ln(1 /
  // freq_scale)). ext_factor 0: plain (linearly scaled) rope, cos/sin scaled by attn_factor.
  float ext_factor = 0;
  float attn_factor = 1;
  std::array<float, 2> corr_dims = {0, 0};
};

// ggml_rope_yarn_corr_dims: the pair range [start, end] over which YaRN's ramp falls, from the
// dims whose wavelength turns beta_fast (start, floored) and beta_slow (end, ceiled) times over
// the original context n_ctx_orig, clamped to [0, rot_dims - 1].
std::array<float, 2> rope_yarn_corr_dims(int32_t rot_dims, int32_t n_ctx_orig, float freq_base,
                                         float beta_fast, float beta_slow);

// Rotates x[t, h, :] in place by position positions[t], for t < num_tokens, h < num_heads.
void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
          const int32_t* positions, const RopeParams& params);

// Σ p[i] for i < n (wrapping), split across the kernel threads, each streaming its contiguous
// share with the active ISA's widest loads: the read-bandwidth measurement of `pagoda bench` and
// bench/kernels (a plain loop under-reads the machine's bandwidth).
uint64_t stream_sum(const uint64_t* p, size_t n);

// out[i] = silu(gate[i]) * up[i] for i < n. out may alias gate.
void silu_mul(const float* gate, const float* up, int64_t n, float* out);

// out[i] = gelu(gate[i]) * up[i] for i < n, GELU in its tanh form (GeGLU: Gemma's FFN):
// gelu(x) = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x³))). out may alias gate.
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out);

// In place: x[i] = cap * tanh(x[i] / cap) for i < n (Gemma 2's logit soft-capping). cap > 0.
void softcap(float* x, int64_t n, float cap);

// In place: x[r, :] = softmax(x[r, :]) (max-subtracted; -inf entries get 0; a row that is all
// -inf becomes all 0).
void softmax(float* x, int64_t rows, int64_t dim);

// y[i] += x[i].
void add_inplace(float* y, const float* x, int64_t n);

// Where head_matmul finds head h of token t: data + t * token_stride + h * head_stride.
struct HeadRows {
  int64_t token_stride = 0;
  int64_t head_stride = 0;
};

// Per-head products with per-head f32 matrices (multi-head latent attention's absorbed
// projections): for t < num_tokens, h < num_heads and r < out_dim,
//   y(t, h)[r] = Σ_c x(t, h)[c] · w[h, c, r]       (w: [num_heads, in_dim, out_dim] f32)
// summed over c in order (an axpy of w's rows per input value). x(t, h): in_dim floats at
// x + t * xs.token_stride + h * xs.head_stride; y(t, h): out_dim floats, likewise. Each output row
// depends only on its own input row: batched == alone. y must not overlap x.
void head_matmul(const float* w, int64_t num_heads, int64_t in_dim, int64_t out_dim, const float* x,
                 HeadRows xs, int64_t num_tokens, float* y, HeadRows ys);

}  // namespace pagoda::kernels
