// config_from_gguf: each value is checked against model::ConfigLimits as it is read (before it
// is narrowed), naming its key; architecture constraints and validate_config follow in the loader.
#include "loader/gguf_config.h"

#include <cmath>
#include <string>
#include <string_view>

#include "format/gguf_file.h"

namespace pagoda::loader {
namespace {

using model::ModelConfig;
using L = model::ConfigLimits;

Result<int32_t> get_count(const format::GgufFile& f, const std::string& key, int64_t max) {
  PAGODA_ASSIGN_OR_RETURN(uint64_t v, f.get_uint(key));
  if (v == 0 || v > static_cast<uint64_t>(max)) {
    return invalid_argument("metadata {} = {} is out of range [1, {}]", key, v, max);
  }
  return static_cast<int32_t>(v);
}

Result<int32_t> get_count_or(const format::GgufFile& f, const std::string& key, int64_t max,
                             int32_t fallback) {
  if (f.find(key) == nullptr) return fallback;
  return get_count(f, key, max);
}

// A positive rope scale key when present (out: left as it is when absent).
Status read_rope_scale(const format::GgufFile& f, const std::string& key, float& out) {
  if (f.find(key) == nullptr) return Status();
  PAGODA_ASSIGN_OR_RETURN(double v, f.get_float(key));
  if (!(v > 0) || v > L::kMaxRopeScaling) return invalid_argument("{} {} is out of range", key, v);
  out = static_cast<float>(v);
  return Status();
}

// The keys every scaling type reads, as llama.cpp does: original_context_length (YaRN's ramp,
// LongRoPE's long/short choice) and attn_factor (the cos/sin scale; phi3's LongRoPE attention
// factor).
Status read_rope_context(const format::GgufFile& f, const std::string& a, ModelConfig& c) {
  if (f.find(a + "rope.scaling.original_context_length") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(
        c.rope_orig_ctx, get_count(f, a + "rope.scaling.original_context_length", L::kMaxContext));
  }
  return read_rope_scale(f, a + "rope.scaling.attn_factor", c.rope_attn_factor);
}

// YaRN's own keys (as llama.cpp reads them): original_context_length defaults to context_length,
// yarn_beta_fast / yarn_beta_slow (32 / 1), yarn_log_multiplier (deepseek2 only); ext_factor is 1.
Status read_yarn(const format::GgufFile& f, const std::string& a, double factor, ModelConfig& c) {
  c.rope_ext_factor = 1.0f;
  if (c.rope_orig_ctx == 0) c.rope_orig_ctx = c.context_length;
  PAGODA_RETURN_IF_ERROR(
      read_rope_scale(f, a + "rope.scaling.yarn_beta_fast", c.rope_yarn_beta_fast));
  PAGODA_RETURN_IF_ERROR(
      read_rope_scale(f, a + "rope.scaling.yarn_beta_slow", c.rope_yarn_beta_slow));
  model::extend_yarn_context(c, factor);
  if (f.find(a + "rope.scaling.yarn_log_multiplier") != nullptr) {
    const std::string key = a + "rope.scaling.yarn_log_multiplier";
    PAGODA_ASSIGN_OR_RETURN(double mul, f.get_float(key));
    if (a == "deepseek2.") {  // DeepSeek's mscale_all_dim x 0.1 (arch/deepseek2.cc applies it)
      if (!(mul >= 0) || mul > L::kMaxRopeScaling) {
        return invalid_argument("{} {} is out of range [0, {}]", key, mul, L::kMaxRopeScaling);
      }
      c.rope_yarn_log_mul = static_cast<float>(mul);
    } else if (mul != 0.0) {
      return unimplemented("{} {} is not supported for {}", key, mul, a.substr(0, a.size() - 1));
    }
  }
  return Status();
}

}  // namespace

Result<ModelConfig> config_from_gguf(const format::GgufFile& f) {
  ModelConfig c;
  PAGODA_ASSIGN_OR_RETURN(std::string_view arch, f.get_string("general.architecture"));
  c.arch = std::string(arch);
  if (auto name = f.get_string("general.name"); name.ok()) c.name = std::string(*name);
  const std::string a = c.arch + ".";

  PAGODA_ASSIGN_OR_RETURN(c.num_layers, get_count(f, a + "block_count", L::kMaxLayers));
  PAGODA_ASSIGN_OR_RETURN(c.hidden_dim, get_count(f, a + "embedding_length", L::kMaxHidden));
  PAGODA_ASSIGN_OR_RETURN(c.num_heads, get_count(f, a + "attention.head_count", L::kMaxHeads));
  PAGODA_ASSIGN_OR_RETURN(
      c.num_kv_heads, get_count_or(f, a + "attention.head_count_kv", L::kMaxHeads, c.num_heads));
  PAGODA_ASSIGN_OR_RETURN(c.ffn_dim, get_count(f, a + "feed_forward_length", L::kMaxFfn));
  PAGODA_ASSIGN_OR_RETURN(c.context_length, get_count(f, a + "context_length", L::kMaxContext));
  if (c.hidden_dim % c.num_heads != 0 && f.find(a + "attention.key_length") == nullptr) {
    return invalid_argument("embedding_length {} is not a multiple of attention.head_count {}",
                            c.hidden_dim, c.num_heads);
  }
  PAGODA_ASSIGN_OR_RETURN(c.head_dim, get_count_or(f, a + "attention.key_length", L::kMaxHeadDim,
                                                   c.hidden_dim / c.num_heads));
  if (f.find(a + "attention.value_length") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(int32_t v_dim,
                            get_count(f, a + "attention.value_length", L::kMaxHeadDim));
    // Only MLA models (deepseek2) may differ; validate_config refuses the others.
    if (v_dim != c.head_dim) c.v_head_dim = v_dim;
  }
  // Multi-head latent attention (deepseek2): the q and KV compression ranks.
  if (f.find(a + "attention.q_lora_rank") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.q_lora_rank,
                            get_count(f, a + "attention.q_lora_rank", L::kMaxHidden));
  }
  if (f.find(a + "attention.kv_lora_rank") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.kv_lora_rank,
                            get_count(f, a + "attention.kv_lora_rank", L::kMaxHidden));
  }
  PAGODA_ASSIGN_OR_RETURN(c.rope_dims,
                          get_count_or(f, a + "rope.dimension_count", L::kMaxHeadDim, c.head_dim));
  if (f.find(a + "rope.freq_base") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(double base, f.get_float(a + "rope.freq_base"));
    c.rope_theta = static_cast<float>(base);
  }
  if (f.find(a + "attention.layer_norm_epsilon") != nullptr) {  // encoders' LayerNorm
    PAGODA_ASSIGN_OR_RETURN(double eps, f.get_float(a + "attention.layer_norm_epsilon"));
    if (!(eps >= 0) || eps > L::kMaxRmsNormEps) {
      return invalid_argument("{}attention.layer_norm_epsilon {} is out of range", a, eps);
    }
    c.layer_norm_eps = static_cast<float>(eps);
  }
  if (f.find(a + "pooling_type") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(int64_t pooling, f.get_int(a + "pooling_type"));
    if (pooling < 0 || pooling > 4) {
      return invalid_argument("{}pooling_type {} is out of range [0, 4]", a, pooling);
    }
    c.pooling_type = static_cast<int32_t>(pooling);
  }
  if (f.find(a + "attention.layer_norm_rms_epsilon") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(double eps, f.get_float(a + "attention.layer_norm_rms_epsilon"));
    c.rms_norm_eps = static_cast<float>(eps);
  }
  // RoPE scaling: none, linear and yarn are applied here; Llama-3 style scaling arrives as the
  // rope_freqs.weight tensor, LongRoPE (phi3) as rope_factors_long/short.weight (bound by the
  // weights, model/decoder.cc).
  std::string scaling = "none";
  if (f.find(a + "rope.scaling.type") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(std::string_view s, f.get_string(a + "rope.scaling.type"));
    scaling = std::string(s);
  }
  double factor = 1.0;
  if (f.find(a + "rope.scaling.factor") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(factor, f.get_float(a + "rope.scaling.factor"));
  } else if (f.find(a + "rope.scale_linear") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(factor, f.get_float(a + "rope.scale_linear"));
    scaling = "linear";
  }
  if (scaling == "linear" || scaling == "yarn") {
    if (!(factor > 0) || factor > L::kMaxRopeScaling) {
      return invalid_argument("rope.scaling.factor {} is out of range", factor);
    }
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  }
  PAGODA_RETURN_IF_ERROR(read_rope_context(f, a, c));
  if (scaling == "yarn") {
    PAGODA_RETURN_IF_ERROR(read_yarn(f, a, factor, c));
  } else if (scaling != "linear" && scaling != "none" && scaling != "llama3" && factor != 1.0) {
    return unimplemented("rope.scaling.type '{}' is not supported yet", scaling);
  }
  if (f.find(a + "expert_count") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.num_experts, get_count(f, a + "expert_count", L::kMaxExperts));
    PAGODA_ASSIGN_OR_RETURN(c.num_experts_used,
                            get_count(f, a + "expert_used_count", L::kMaxExperts));
  } else if (f.find(a + "expert_used_count") != nullptr) {
    return invalid_argument("metadata {}expert_used_count is set but {}expert_count is not", a, a);
  }
  if (f.find(a + "expert_feed_forward_length") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.expert_ffn_dim,
                            get_count(f, a + "expert_feed_forward_length", L::kMaxFfn));
  }
  if (f.find(a + "expert_shared_feed_forward_length") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.shared_expert_ffn_dim,
                            get_count(f, a + "expert_shared_feed_forward_length", L::kMaxFfn));
  }
  // DeepSeek's MoE: dense leading layers, shared experts (fused), routing scale/norm/function.
  if (f.find(a + "leading_dense_block_count") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(uint64_t n, f.get_uint(a + "leading_dense_block_count"));
    if (n > static_cast<uint64_t>(c.num_layers)) {
      return invalid_argument("metadata {}leading_dense_block_count = {} is out of range [0, {}]",
                              a, n, c.num_layers);
    }
    c.leading_dense_layers = static_cast<int32_t>(n);
  }
  if (f.find(a + "expert_shared_count") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.expert_shared_count,
                            get_count(f, a + "expert_shared_count", L::kMaxExperts));
  }
  if (f.find(a + "expert_weights_norm") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(bool norm, f.get_bool(a + "expert_weights_norm"));
    c.expert_weights_norm = norm;
  }
  if (f.find(a + "expert_gating_func") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(uint64_t g, f.get_uint(a + "expert_gating_func"));
    if (g != 1 && g != 2) {
      return invalid_argument(
          "metadata {}expert_gating_func = {} is not 1 (softmax) or 2 (sigmoid)", a, g);
    }
    c.expert_gating = static_cast<int32_t>(g);
  }
  // Grouped routing (DeepSeek-V3): experts in expert_group_count groups, expert_group_used_count
  // of them eligible per token (validate_config checks them against expert_count).
  if (f.find(a + "expert_group_count") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.expert_groups,
                            get_count(f, a + "expert_group_count", L::kMaxExperts));
    PAGODA_ASSIGN_OR_RETURN(c.expert_groups_used,
                            get_count(f, a + "expert_group_used_count", L::kMaxExperts));
  }
  // Sliding window and soft-caps: read here, used by the architectures that have them (each
  // arch's configure says which layers slide).
  if (f.find(a + "attention.sliding_window") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.sliding_window,
                            get_count(f, a + "attention.sliding_window", L::kMaxContext));
  }
  const auto read_scale = [&](const std::string& key, float& out) -> Status {
    if (f.find(key) == nullptr) return Status();
    PAGODA_ASSIGN_OR_RETURN(double v, f.get_float(key));
    if (!(v > 0) || v > L::kMaxScale) {
      return invalid_argument("metadata {} = {} is out of range (0, {}]", key, v, L::kMaxScale);
    }
    out = static_cast<float>(v);
    return Status();
  };
  PAGODA_RETURN_IF_ERROR(read_scale(a + "attn_logit_softcapping", c.attn_softcap));
  PAGODA_RETURN_IF_ERROR(read_scale(a + "final_logit_softcapping", c.final_softcap));
  PAGODA_RETURN_IF_ERROR(read_scale(a + "expert_weights_scale", c.moe_weights_scale));
  // Vocab size: explicit key, else the tokenizer, else the embedding tensor.
  if (f.find(a + "vocab_size") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.vocab_size, get_count(f, a + "vocab_size", L::kMaxVocab));
  } else if (const auto* tokens = f.find("tokenizer.ggml.tokens"); tokens != nullptr) {
    if (tokens->count == 0 || tokens->count > static_cast<uint64_t>(L::kMaxVocab)) {
      return invalid_argument("tokenizer.ggml.tokens has {} entries", tokens->count);
    }
    c.vocab_size = static_cast<int32_t>(tokens->count);
  } else if (const auto* emb = f.find_tensor("token_embd.weight"); emb != nullptr) {
    if (emb->dims[1] == 0 || emb->dims[1] > static_cast<uint64_t>(L::kMaxVocab)) {
      return invalid_argument("token_embd.weight has {} rows", emb->dims[1]);
    }
    c.vocab_size = static_cast<int32_t>(emb->dims[1]);
  } else {
    return invalid_argument("cannot determine the vocabulary size");
  }

  c.tied_embeddings = f.find_tensor("output.weight") == nullptr;
  // Architecture-specific fields (rope style, biases) are set by the arch's adjust_config.
  return c;
}

}  // namespace pagoda::loader
