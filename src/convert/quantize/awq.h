// AWQ (Lin et al. 2023, "AWQ: Activation-aware Weight Quantization", the scale search of
// llm-awq's auto_scale): the matrices that read the same input x (e.g. q, k and v after
// attn_norm) are scaled per input channel, W' = W·diag(s), and the previous operation's output
// is divided by s (folded into a norm's weight or the rows of a previous linear; the caller
// folds), so W'x' = Wx exactly in floats while round-to-nearest of W' protects the channels with
// large activations. s = mean|x|^α (clamped to >= 1e-4, normalised by sqrt(max s · min s)) for
// α in {0, 1/grid, ..., (grid-1)/grid}, the one minimising the layer output error of the
// quantised matrices on the calibration inputs, Σ_m Σ_t ‖(W_m - Q(W_m·diag(s))·diag(s)⁻¹) x_t‖²
// (computed from H = Σ x xᵀ, gptq.h's output_error). α = 0 is s = 1, plain RTN: the search is
// never worse than RTN on the calibration inputs. llm-awq's weight clipping search is not done.
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

// out = dequant(quant(w·diag(s)))·diag(s)⁻¹ (s null: plain RTN), [rows, cols]; encoded (if not
// null) receives the rows · row_size_bytes bytes of quant(w·diag(s)).
void rtn_scaled(tensor::DType type, const float* w, int64_t rows, int64_t cols, const float* s,
                float* out, uint8_t* encoded = nullptr);

}  // namespace pagoda::convert
