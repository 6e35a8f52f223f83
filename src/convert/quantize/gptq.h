// GPTQ (Frantar et al. 2022, "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers", Algorithm 1) on the fixed grid of a GGUF block type (grid_quant.h):
// for W [rows, cols] and the layer's calibration Hessian H = Σ_t x_t x_tᵀ (the published 2XXᵀ up
// to a factor that cancels), H += λ·I with λ = damp · mean(diag H), U = the upper Cholesky factor
// of H⁻¹; columns are quantised one at a time (in order, or by decreasing diag H with act-order:
// GGUF has no permutation, so act-order only changes the processing order), and each column's
// error (w - q) / U_jj is spread over the columns not yet quantised through row j of U, lazily
// in blocks of `block` columns. Rows are independent (each row sees the same U), so they run in
// parallel. Columns whose diag H is 0 (never active on the calibration text) get H_jj = 1 and keep
// their weights (the paper zeroes them; on other text they may be active).
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "tensor/dtype.h"

namespace pagoda::convert {

struct GptqOptions {
  double damp = 0.01;  // λ = damp · mean(diag H); raised x10 (up to 3 times) if H is not PD
  int32_t block = 128;
  bool act_order = false;
  // Where the grid's block scales come from:
  // - false (static): the encoding passed in (round-to-nearest or imatrix-weighted scales of the
  //   original weights), fixed before any column is quantised;
  // - true (running, AutoGPTQ's default static_groups=False): each GGUF block (32 elements, 256
  //   for the K-quants) is re-encoded by kernels::quantize_row from the error-compensated weights
  //   when GPTQ reaches its first column, and its levels then chosen on that grid. Needs the
  //   natural column order: with act_order the grid is static.
  bool running_grid = false;
};

// w: [rows, cols] f32 row-major. h: [cols, cols] (symmetric). encoded: rows · row_size_bytes
// bytes holding an encoding of w whose block scales fix the grid (e.g. kernels::quantize_row's);
// on return its levels are GPTQ's. Errors: H not positive definite even after damping.
// precondition: grid_supported(type), cols % block_size(type) == 0.
Status gptq_quantize(tensor::DType type, const float* w, int64_t rows, int64_t cols,
                     std::span<const double> h, const GptqOptions& options, uint8_t* encoded);

// The layer-output error of replacing w by wq on the calibration inputs:
// Σ_t ‖(w - wq) x_t‖² = Σ_r δ_rᵀ H δ_r, δ_r = row r of w - wq.
double output_error(const float* w, const float* wq, int64_t rows, int64_t cols,
                    std::span<const double> h);

}  // namespace pagoda::convert
