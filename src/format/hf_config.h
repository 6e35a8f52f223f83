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
  std::optional<double> beta_fast, beta_slow;     // yarn
  std::optional<double> attention_factor;         // yarn, longrope: the whole cos/sin scale
  std::optional<double> mscale, mscale_all_dim;   // yarn (DeepSeek): not supported
  std::vector<double> long_factor, short_factor;  // longrope (older name: su): per-pair divisors
};

// config.json.
struct HfConfig {
  std::vector<std::string> architectures;  // e.g. {"LlamaForCausalLM"}
  std::string model_type;                  // "llama", "mistral", "qwen2", "mixtral"
  std::optional<int64_t> hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
      num_key_value_heads, head_dim, vocab_size, max_position_embeddings;
  std::optional<double> rms_norm_eps, rope_theta;
  std::optional<HfRopeScaling> rope_scaling;
  // Phi-3's LongRoPE: the pretrained context (max_position_embeddings is the extended one);
  // partial_rotary_factor: the share of each head rotated (Phi-4-mini: 0.75).
  std::optional<int64_t> original_max_position_embeddings;
  std::optional<double> partial_rotary_factor;
  std::optional<bool> tie_word_embeddings, attention_bias, mlp_bias, use_sliding_window;
  // sliding_window: Mistral/Mixtral/Phi-3 (every layer); the Qwen2 family applies it only with
  // use_sliding_window, from layer max_window_layers on.
  std::optional<int64_t> sliding_window, max_window_layers;
  std::optional<int64_t> num_local_experts, num_experts_per_tok;  // Mixtral
  std::optional<std::string> hidden_act, torch_dtype, name_or_path;
  // Gemma 2/3: hidden_activation (Gemma's name for hidden_act), query_pre_attn_scalar (queries
  // scaled by its -1/2 power), soft-caps, Gemma 3's local rope base and local/global pattern
  // (sliding_window_pattern, or the newer layer_types list).
  std::optional<std::string> hidden_activation;
  std::optional<double> query_pre_attn_scalar, attn_logit_softcapping, final_logit_softcapping,
      rope_local_base_freq;
  std::optional<int64_t> sliding_window_pattern;
  std::vector<std::string> layer_types;  // "sliding_attention" / "full_attention" per layer
  // Qwen2-MoE / Qwen3-MoE: num_experts routed experts of moe_intermediate_size, a shared expert of
  // shared_expert_intermediate_size (Qwen2-MoE), norm_topk_prob, decoder_sparse_step and
  // mlp_only_layers (which layers are dense).
  std::optional<int64_t> num_experts, moe_intermediate_size, shared_expert_intermediate_size,
      decoder_sparse_step;
  std::optional<bool> norm_topk_prob;
  std::vector<int64_t> mlp_only_layers;
  // DeepSeek-V2/V3: multi-head latent attention ranks and head parts, fine-grained experts.
  std::optional<int64_t> q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim,
      n_routed_experts, n_shared_experts, first_k_dense_replace, moe_layer_freq, n_group,
      topk_group;
  std::optional<double> routed_scaling_factor;
  std::optional<std::string> topk_method, scoring_func;
  // DeepSeek-V3: multi-token-prediction layers stored after the decoder's (not run).
  std::optional<int64_t> num_nextn_predict_layers;
  std::vector<int64_t> bos_token_id, eos_token_id;  // an int or a list in the file
  // The fields above came from text_config (a multimodal checkpoint; architectures, model_type
  // and, when text_config has none, the token ids and dtype are the top level's).
  bool from_text_config = false;
  // BERT (BertModel, BertForSequenceClassification): LayerNorm epsilon, token-type rows and the
  // position embedding kind ("absolute" is the one supported).
  std::optional<double> layer_norm_eps;
  std::optional<int64_t> type_vocab_size;
  std::optional<std::string> position_embedding_type;
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
