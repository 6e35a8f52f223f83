// Calibrated quantisation (`pagoda quantize --calibration TEXT --method gptq|awq`): the weights
// of one layer at a time are chosen from the activations they see on a calibration text, the way
// GPTQ and AWQ do it, with the inputs of layer l computed by a model whose layers < l are already
// the quantised ones (each stage builds the model from the input file with the finished tensors
// overlaid, runs the calibration windows with a matmul observer that accumulates, for layer l's
// matrices only, H = Σ x xᵀ and Σ|x| per input column, then quantises them). Memory: one layer's
// Hessians and float weights, plus the finished tensors (the output's size) and one model copy.
// The output matrix is a last stage (its input is the final norm's output); token_embd is a
// lookup and stays round-to-nearest.
// - GPTQ (gptq.h): the grid of each row is the reference round-to-nearest encoding's block scales
//   (or, with an imatrix, the weighted search's, weighted_quant.h), then GPTQ chooses the levels.
//   Types without a fixed grid here (Q4_1, Q5_1, floats: grid_quant.h lists those with one) are
//   rounded to nearest.
// - AWQ (awq.h): scales searched per group of matrices sharing an input and folded into the
//   previous operation, so the file stays a standard GGUF: attn_norm -> attn_q/k/v (or attn_qkv),
//   ffn_norm -> ffn_gate/ffn_up, attn_v -> attn_output (only when num_heads == num_kv_heads and v
//   has no bias and is not fused), ffn_up -> ffn_down (not when gate/up are fused),
//   output_norm -> output. Norms must be F32 (as every converter writes them). Then (unless
//   awq_clip is off) llm-awq's clipping search on every matrix but attn_q/attn_k.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "convert/quantize/gptq.h"
#include "convert/quantize/quant_mix.h"
#include "tensor/dtype.h"

namespace pagoda::format {
class GgufFile;
struct Imatrix;
}  // namespace pagoda::format

namespace pagoda::convert {

// kAwqGptq: AWQ's scales (and clipping), then GPTQ on the scaled weights instead of rounding to
// nearest, the grid taken from the clipped weights (the combination the AWQ paper reports).
enum class CalibrationMethod { kGptq, kAwq, kAwqGptq };

struct CalibrationOptions {
  CalibrationMethod method = CalibrationMethod::kGptq;
  GptqOptions gptq;
  int32_t awq_grid = 20;
  bool awq_clip = true;           // llm-awq's clipping search after the scales (awq.h)
  int32_t n_ctx = 512;            // calibration window (tokens)
  int32_t max_windows = 0;        // 0: every whole window of the text
  std::optional<int32_t> bos_id;  // replaces each window's first token (as perplexity does)
  const format::Imatrix* imatrix = nullptr;  // GPTQ: grids from the weighted scale search
};

// A tensor's final bytes, in the type the quantisation plan gave it (norms: their input type).
struct CalibratedTensor {
  tensor::DType dtype = tensor::DType::kF32;
  std::vector<uint8_t> bytes;
};
using CalibratedTensors =
    std::map<std::string, std::shared_ptr<const CalibratedTensor>, std::less<>>;

// Per quantised matrix: the layer-output error on the calibration inputs, Σ_t ‖(W - Ŵ) x_t‖²,
// of round-to-nearest and of the method (AWQ: per group, with the chosen α).
struct CalibrationRecord {
  std::string name;
  double error_rtn = 0;
  double error = 0;
  double alpha = -1;  // AWQ only
};

struct CalibrationResult {
  CalibratedTensors tensors;
  std::vector<CalibrationRecord> records;
  size_t num_tokens = 0;  // calibration tokens per stage
};

struct CalibrationProgress {
  int32_t stage = 0;  // 0 .. num_stages - 1 (layers, then the output)
  int32_t num_stages = 0;
  std::string_view what;  // "forward" or "quantize"
  size_t done = 0, total = 0;
};
using CalibrationProgressFn = std::function<void(const CalibrationProgress&)>;

// plans: plan_tensor_types' result for `in`'s tensors. tokens: the calibration text. Errors: the
// architecture cannot be built, fewer tokens than one window, a window longer than the model's
// context, a singular Hessian.
Result<CalibrationResult> calibrate(std::shared_ptr<const format::GgufFile> in,
                                    std::span<const TensorPlan> plans,
                                    std::span<const int32_t> tokens,
                                    const CalibrationOptions& options,
                                    const CalibrationProgressFn& progress = nullptr);

}  // namespace pagoda::convert
