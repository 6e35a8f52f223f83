// The JSON files of a Hugging Face model directory, parsed into plain structs: config.json,
// generation_config.json, tokenizer_config.json and model.safetensors.index.json. Parsing is
// strict JSON (base/strict_json.h: duplicate keys, depth) and type-checks every field it reads:
// a field present with the wrong type is invalid_argument naming the file's field; null counts
// as absent, as in transformers. Unknown fields are ignored. What the values mean for a model
// (which architectures, which ranges) is decided by loader/hf, not here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace pagoda::format {

struct HfRopeScaling {
  std::string type;  // "rope_type" (or the older "type"): "linear", "llama3", "dynamic", ...
  std::optional<double> factor;
  std::optional<double> low_freq_factor;   // llama3
  std::optional<double> high_freq_factor;  // llama3
  std::optional<int64_t> original_max_position_embeddings;
  std::optional<double> beta_fast, beta_slow;    // yarn
  std::optional<double> attention_factor;        // yarn: the whole cos/sin scale
  std::optional<double> mscale, mscale_all_dim;  // yarn (DeepSeek): not supported
};

// config.json.
struct HfConfig {
  std::vector<std::string> architectures;  // e.g. {"LlamaForCausalLM"}
  std::string model_type;                  // "llama", "mistral", "qwen2", "mixtral"
  std::optional<int64_t> hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
      num_key_value_heads, head_dim, vocab_size, max_position_embeddings;
  std::optional<double> rms_norm_eps, rope_theta;
  std::optional<HfRopeScaling> rope_scaling;
  std::optional<bool> tie_word_embeddings, attention_bias, mlp_bias, use_sliding_window;
  std::optional<int64_t> sliding_window;
  std::optional<int64_t> num_local_experts, num_experts_per_tok;  // Mixtral
  std::optional<std::string> hidden_act, torch_dtype, name_or_path;
  std::vector<int64_t> bos_token_id, eos_token_id;  // an int or a list in the file
};

// generation_config.json: the sampling defaults the authors chose.
struct HfGenerationConfig {
  std::optional<bool> do_sample;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::optional<int64_t> top_k, max_new_tokens, max_length;
  std::vector<int64_t> bos_token_id, eos_token_id, pad_token_id;
};

// tokenizer_config.json.
struct HfTokenizerConfig {
  // The chat template: the string, or from a list of {name, template} the one named "default"
  // (else the first). Empty when absent.
  std::string chat_template;
  std::vector<std::pair<std::string, std::string>> named_chat_templates;  // the list, if a list
  // Special token texts: a string or an AddedToken dict's "content".
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token;
  std::optional<bool> add_bos_token, add_eos_token, clean_up_tokenization_spaces, add_prefix_space,
      legacy;
  std::optional<std::string> tokenizer_class;
};

// model.safetensors.index.json.
struct HfWeightIndex {
  std::vector<std::string> shards;                    // distinct file names, sorted
  std::map<std::string, std::string> tensor_to_file;  // weight_map
};

Result<HfConfig> parse_hf_config(std::string_view json_text);
Result<HfGenerationConfig> parse_hf_generation_config(std::string_view json_text);
Result<HfTokenizerConfig> parse_hf_tokenizer_config(std::string_view json_text);
// Shard names must be plain file names in the model directory (no '/', '\\', or leading '.').
Result<HfWeightIndex> parse_hf_weight_index(std::string_view json_text);

}  // namespace pagoda::format
