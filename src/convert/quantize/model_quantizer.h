// Quantising a GGUF model file: every tensor the mix (quant_mix.h) says to quantise is
// dequantised row by row (F32/F16/BF16 or any quantised type pagoda reads) and re-encoded with
// ggml's reference quantisers (kernels/quant.h), rows in parallel with OpenMP; the rest is copied
// byte for byte. Metadata is copied in order; general.file_type and
// general.quantization_version (2) are set. Tensor data is streamed from the input mapping into
// the writer, so memory stays at a few MB per thread whatever the model size.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "convert/quantize/calibrated_quantizer.h"
#include "convert/quantize/quant_mix.h"
#include "format/gguf_writer.h"

namespace pagoda::format {
class GgufFile;
struct Imatrix;
}  // namespace pagoda::format

namespace pagoda::convert {

struct QuantizeOptions {
  FileType file_type = FileType::kQ4_K_M;
  int num_threads = 0;  // 0: OpenMP's default
  // Importance matrix (must outlive the write): tensors it covers whose type has a weighted
  // quantiser (weighted_quant.h: Q4_0, Q4_K, Q6_K) are encoded minimising the weighted error;
  // others (Q8_0, Q5_K, ...) are rounded to nearest, as llama.cpp does for Q8_0.
  const format::Imatrix* imatrix = nullptr;
  // Tensors already encoded by a calibrated quantiser (calibrated_quantizer.h; must outlive the
  // write): written as given instead of rounded. Each must have the plan's type (or, for a tensor
  // the plan copies, its input type) and the tensor's byte size.
  const CalibratedTensors* calibrated = nullptr;
  // llama-quantize's --token-embedding-type: token_embd.weight gets this type instead of the mix's
  // (applies to every method alike; the embedding is a lookup no calibrated method sees).
  std::optional<tensor::DType> token_embedding_type;
};

struct QuantizeProgress {
  size_t tensor_index = 0;  // the tensor being written, in file order
  size_t num_tensors = 0;
  std::string_view tensor_name;
  uint64_t in_bytes_done = 0;  // input tensor bytes consumed so far
  uint64_t in_bytes_total = 0;
};
using QuantizeProgressFn = std::function<void(const QuantizeProgress&)>;

struct QuantizedModel {
  format::GgufWriter writer;      // reads `in` while writing: `in` must outlive the write
  std::vector<TensorPlan> plans;  // per input tensor, in file order
  uint64_t in_bytes = 0;          // tensor data in
  uint64_t out_bytes = 0;         // tensor data out (without padding)
  size_t num_weighted = 0;        // tensors encoded with imatrix weights
  size_t num_calibrated = 0;      // tensors taken from options.calibrated
};

// Plans every tensor and builds the writer. Errors (before anything is written): a split file,
// a tensor to quantise whose type pagoda cannot read, a MoE tensor without a layer. Errors while
// writing: a non-finite input value (naming tensor and row).
Result<QuantizedModel> build_quantized_model(const format::GgufFile& in,
                                             const QuantizeOptions& options,
                                             QuantizeProgressFn progress = nullptr);

// dst[0..n) = one row of n elements of type (F16 by table, else kernels::dequantize_row).
// precondition: kernels::can_dequantize(type) or type is F16.
void tensor_row_to_f32(tensor::DType type, const uint8_t* src, float* dst, uint64_t n);

// The mix's plan for every tensor of `in` (file order), token_embd.weight given
// token_embedding_type when set. Errors: its rows are not whole blocks of that type.
Result<std::vector<TensorPlan>> plan_types_for(
    const format::GgufFile& in, FileType type,
    std::optional<tensor::DType> token_embedding_type = std::nullopt);

// What the mix rules need, read from `in`'s metadata (<arch>.block_count etc.).
MixModel mix_model_from_gguf(const format::GgufFile& in);

}  // namespace pagoda::convert
