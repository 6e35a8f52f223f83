// Synthetic models: a GGUF model at a named shape (model_shape.h) with deterministic random
// weights and a real tokenizer copied from a vocab file. Weights are streamed into the writer,
// so writing a multi-GB model needs only a few MB of memory besides the output.
//
// Values: matrices ~ N(0, weight_std) (an Irwin-Hall sum of 4 uniforms, bounded at ±3.5σ),
// norms 1 + N(0, 0.02)-ish, biases ~ N(0, weight_std); element i of a tensor is a pure function
// of (seed, tensor name, i), so files are identical for a seed whatever the thread count, and the
// F16/BF16 files are exactly the F32 file rounded. Norms, biases, the MoE router and
// rope_freqs.weight stay F32.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"
#include "convert/shapes/model_shape.h"
#include "format/gguf_writer.h"
#include "tensor/dtype.h"

namespace pagoda::format {
class GgufFile;
}

namespace pagoda::convert {

struct SynthOptions {
  tensor::DType dtype = tensor::DType::kF16;  // F32, F16 or BF16 for the matrices
  uint64_t seed = 0;
  int32_t num_layers = 0;  // 0: the shape's
  float weight_std = 0.02f;
  int num_threads = 0;  // 0: OpenMP's default
};

// Called after each chunk of tensor data: bytes of tensor data produced so far / in total.
using SynthProgress = std::function<void(size_t tensor_index, size_t num_tensors,
                                         uint64_t bytes_done, uint64_t bytes_total)>;

// Builds the writer: metadata of `shape` (with options.num_layers and the vocab's size),
// tokenizer.* keys copied from `vocab`, and one streamed tensor per weight. `vocab` need not
// outlive the writer. Errors: a vocab without tokenizer.ggml.tokens, an unsupported dtype, a
// layer count out of range.
Result<format::GgufWriter> build_synth_model(const ModelShape& shape, const format::GgufFile& vocab,
                                             const SynthOptions& options,
                                             SynthProgress progress = nullptr);

// The value synth writes for element `index` of a matrix named `name` before scaling: an
// approximately standard normal number. Exposed for tests.
float synth_normal(uint64_t seed, std::string_view name, uint64_t index);

}  // namespace pagoda::convert
