// Quantisation mixes: which tensor type each tensor of a model gets for a target file type
// ("Q4_K_M", "Q8_0", ...), following llama.cpp's llama-quant.cpp so our files have the same
// tensor types as llama-quantize's (without an importance matrix):
// - only weights with >= 2 dims are quantised; norms, the MoE router (ffn_gate_inp) and other
//   1-D tensors are copied unchanged;
// - output.weight (or token_embd.weight when the embeddings are tied) gets Q6_K unless the base
//   type is Q8_0 (Q8_0 when its rows are not whole K-blocks);
// - the _M/_S/_L mixes raise attn_v / ffn_down / attn_output in chosen layers (use_more_bits:
//   the first and last eighth of the layers and every third layer in between);
// - a row length that is not a multiple of the type's block falls back: Q4_K -> Q5_0,
//   Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K -> Q4_0 (llama.cpp uses IQ4_NL, which pagoda cannot
//   write yet; same 4.5 bits per weight), last resort F16.
// Layer counters advance in llama.cpp's tensor order (by layer number, then by name).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace pagoda::convert {

// llama.cpp's llama_ftype values (written as general.file_type).
enum class FileType : uint32_t {
  kAllF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 7,
  kQ5_0 = 8,
  kQ5_1 = 9,
  kQ2_K = 10,
  kQ3_K_S = 11,
  kQ3_K_M = 12,
  kQ3_K_L = 13,
  kQ4_K_S = 14,
  kQ4_K_M = 15,
  kQ5_K_S = 16,
  kQ5_K_M = 17,
  kQ6_K = 18,
  kBF16 = 32,
};

// Parses "Q4_K_M", "q8_0", "F16", ... (case-insensitive; "Q3_K", "Q4_K", "Q5_K" mean the _M
// mixes, as in llama-quantize).
std::optional<FileType> file_type_from_name(std::string_view name);
std::string_view file_type_name(FileType type);
// "Q4_0, Q4_1, ..." for messages.
std::string file_type_names();
// The type most tensors get.
tensor::DType file_type_base(FileType type);

// What the mix rules need to know about the model (from its GGUF metadata).
struct MixModel {
  std::string arch;        // "llama", "qwen2", "falcon", ...
  int32_t num_layers = 0;  // <arch>.block_count
  int32_t num_heads = 0;   // for the GQA ratio; 0 if unknown
  int32_t num_kv_heads = 0;
  int32_t num_experts = 0;  // 0 or 1: dense
};

struct MixTensor {
  std::string_view name;
  uint32_t n_dims = 0;
  uint64_t dims[4] = {1, 1, 1, 1};  // ggml order
  tensor::DType dtype = tensor::DType::kF32;
};

// True if llama.cpp would quantise this tensor (a ".weight" of >= 2 dims that is not a norm, the
// MoE router or one of the few small special weights).
bool is_quantizable(const MixTensor& tensor);

struct TensorPlan {
  tensor::DType dtype;    // the output type (the input's when copied)
  bool quantize = false;  // false: bytes copied unchanged
  bool fallback = false;  // the mix's choice did not fit the row length
};

// The output type of every tensor (same order as `tensors`). Errors: a MoE tensor whose layer
// cannot be read from its name or is out of range.
Result<std::vector<TensorPlan>> plan_tensor_types(const MixModel& model, FileType type,
                                                  std::span<const MixTensor> tensors);

}  // namespace pagoda::convert
