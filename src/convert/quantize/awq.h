// AWQ (Lin et al. 2023, "AWQ: Activation-aware Weight Quantization", the scale search of
// llm-awq's auto_scale): the matrices that read the same input x (e.g. q, k and v after
// attn_norm) are scaled per input channel, W' = W·diag(s), and the previous operation's output
// is divided by s (folded into a norm's weight or the rows of a previous linear; the caller
// folds), so W'x' = Wx exactly in floats while round-to-nearest of W' protects the channels with
// large activations. s = mean|x|^α (clamped to >= 1e-4, normalised by sqrt(max s · min s)) for
// α in {0, 1/grid, ..., (grid-1)/grid}, the one minimising the layer output error of the
// quantised matrices on the calibration inputs, Σ_m Σ_t ‖(W_m - Q(W_m·diag(s))·diag(s)⁻¹) x_t‖²
// (computed from H = Σ x xᵀ, gptq.h's output_error). α = 0 is s = 1, plain RTN: the search is
// never worse than RTN on the calibration inputs.
// Then llm-awq's auto_clip (awq_clip): per output row and group of input columns (the type's
// scale group: 32, or 16 for Q2_K/Q3_K/Q6_K) the weights are clamped to ±r·max|w| with r in
// {1, 0.95, ..., 0.55} (max_shrink 0.5, 20 steps), r chosen to minimise that group's share of
// the output error on the calibration inputs, δ_gᵀ H_gg δ_g (llm-awq measures the group's partial
// dot products on sampled tokens: the same quantity); a row keeps its unclipped weights when the
// clipped row's whole output error δᵀHδ is not lower (K-quant groups share a super-block scale,
// so the per-group choices interact).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tensor/dtype.h"

namespace pagoda::convert {

struct AwqMatrix {
  tensor::DType type;  // the target type (any kernels::can_quantize type)
  const float* w;      // [rows, cols] f32 row-major
  int64_t rows;
};

struct AwqScales {
  std::vector<float> s;  // [cols], 1 when alpha == 0
  double alpha = 0;
  double error = 0;      // the chosen α's output error
  double error_rtn = 0;  // α = 0
};

// mean_abs: [cols] mean |x| per input channel; h: [cols, cols] Σ x xᵀ.
AwqScales awq_search(std::span<const AwqMatrix> matrices, int64_t cols,
                     std::span<const double> mean_abs, std::span<const double> h,
                     int32_t grid = 20);

// Elements that share one scale in the type's blocks: 16 for Q2_K, Q3_K, Q6_K, else 32.
int64_t clip_group(tensor::DType type);

struct AwqClipResult {
  int64_t rows_clipped = 0;
  double error = 0;         // output error after clipping (original space)
  double error_before = 0;  // without clipping
};

// Clips w [rows, cols] (the weights to round to nearest, already scaled: w = W·diag(col_scale)
// with W's rows divided by row_scale) in place. The error of a candidate is measured in W's space:
// δ = W - diag(row_scale)·dequant(quant(w))·diag(col_scale)⁻¹, as Σ δ H δᵀ with h [cols, cols]
// = Σ x xᵀ of W's inputs. col_scale / row_scale may be null (1).
AwqClipResult awq_clip(tensor::DType type, float* w, int64_t rows, int64_t cols,
                       const float* col_scale, const float* row_scale, std::span<const double> h,
                       int32_t grid = 20, double max_shrink = 0.5);

// out = dequant(quant(w·diag(s)))·diag(s)⁻¹ (s null: plain RTN), [rows, cols]; encoded (if not
// null) receives the rows · row_size_bytes bytes of quant(w·diag(s)).
void rtn_scaled(tensor::DType type, const float* w, int64_t rows, int64_t cols, const float* s,
                float* out, uint8_t* encoded = nullptr);

}  // namespace pagoda::convert
