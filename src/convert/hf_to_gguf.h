// Converting a Hugging Face model directory (HfCheckpoint + its tokenizer files) into a GGUF
// file that pagoda and llama.cpp load, in the layout llama.cpp's convert_hf_to_gguf.py writes:
// - metadata: general.*, <arch>.* (sizes, rope base/scaling, key_length when head_dim is not
//   hidden/heads, experts), tokenizer.ggml.* (model "llama" for SentencePiece-style vocabularies,
//   "gpt2" + merges + pre for byte-level ones; the token list padded with unused "[PAD<id>]"
//   tokens up to the model's vocab_size), the chat template;
// - llama-architecture q/k rows are permuted from HF's rotate-half order into the interleaved
//   order GGUF llama files use (rows (h, s, i) -> (h, i, s), s the half, i < head_dim/2); qwen2
//   keeps them (its GGUF also uses rotate-half RoPE);
// - Mixtral experts are stacked into blk.N.ffn_{gate,up,down}_exps.weight [.., .., experts];
// - tensor types follow the file type's mix (convert/quantize/quant_mix.h); tensors it never
//   quantises (norms, rope factors, the MoE router) are written as F32, as llama.cpp's converter
//   does.
// Data is streamed from the safetensors mappings row by row at write time (rows in parallel).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "convert/quantize/model_quantizer.h"
#include "loader/hf/hf_checkpoint.h"
#include "loader/hf/hf_tokenizer_files.h"

namespace pagoda::convert {

struct ConvertOptions {
  FileType file_type = FileType::kF16;
  int num_threads = 0;  // 0: OpenMP's default
  std::string name;     // general.name (default: the directory's name)
};

// The writer reads the checkpoint's mappings at write time: `checkpoint` is kept alive by it.
// Errors before writing: an unsupported layout (a missing expert, a tensor pagoda cannot map);
// while writing: a non-finite weight (naming tensor and row).
Result<QuantizedModel> build_gguf_from_hf(std::shared_ptr<const loader::HfCheckpoint> checkpoint,
                                          const loader::HfTokenizerFiles& tokenizer,
                                          const ConvertOptions& options,
                                          QuantizeProgressFn progress = nullptr);

// The row order of a llama GGUF q/k weight: out[r] = in[permuted_row(r, ...)], rows of
// `n_head` heads of `rows / n_head` rows each (an even number). Exposed for tests.
int64_t gguf_qk_source_row(int64_t gguf_row, int64_t rows, int32_t n_head);

}  // namespace pagoda::convert
