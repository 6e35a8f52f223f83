#include "model/model_config.h"

#include <cmath>
#include <string_view>

#include "format/gguf_file.h"

namespace pagoda::model {
namespace {

// Upper bounds that no real model exceeds; they keep later size arithmetic far from overflow.
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxHidden = 1 << 17;
constexpr int64_t kMaxHeads = 1024;
constexpr int64_t kMaxFfn = 1 << 20;
constexpr int64_t kMaxVocab = 1 << 22;
constexpr int64_t kMaxContext = 1 << 24;
constexpr int64_t kMaxExperts = 1024;

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

}  // namespace

Status validate_config(const ModelConfig& c) {
  auto positive = [](std::string_view what, int64_t v, int64_t max) -> Status {
    if (v <= 0 || v > max) return invalid_argument("{} = {} is out of range [1, {}]", what, v, max);
    return Status();
  };
  PAGODA_RETURN_IF_ERROR(positive("block_count", c.num_layers, kMaxLayers));
  PAGODA_RETURN_IF_ERROR(positive("embedding_length", c.hidden_dim, kMaxHidden));
  PAGODA_RETURN_IF_ERROR(positive("attention.head_count", c.num_heads, kMaxHeads));
  PAGODA_RETURN_IF_ERROR(positive("attention.head_count_kv", c.num_kv_heads, kMaxHeads));
  PAGODA_RETURN_IF_ERROR(positive("head_dim", c.head_dim, 1024));
  PAGODA_RETURN_IF_ERROR(positive("feed_forward_length", c.ffn_dim, kMaxFfn));
  PAGODA_RETURN_IF_ERROR(positive("vocab_size", c.vocab_size, kMaxVocab));
  PAGODA_RETURN_IF_ERROR(positive("context_length", c.context_length, kMaxContext));
  if (c.num_heads % c.num_kv_heads != 0) {
    return invalid_argument("attention.head_count {} is not a multiple of head_count_kv {}",
                            c.num_heads, c.num_kv_heads);
  }
  if (c.head_dim % 2 != 0) return invalid_argument("head_dim {} is odd", c.head_dim);
  if (c.rope_dims <= 0 || c.rope_dims > c.head_dim || c.rope_dims % 2 != 0) {
    return invalid_argument("rope.dimension_count {} must be even and in [2, head_dim {}]",
                            c.rope_dims, c.head_dim);
  }
  if (!(c.rope_theta > 0) || !(c.rope_freq_scale > 0)) {
    return invalid_argument("rope.freq_base {} and scaling must be positive", c.rope_theta);
  }
  if (c.rope_ext_factor != 0.0f && (!(c.rope_attn_factor > 0) || !(c.rope_yarn_beta_fast > 0) ||
                                    !(c.rope_yarn_beta_slow > 0) || c.rope_yarn_orig_ctx <= 0)) {
    return invalid_argument(
        "rope scaling (yarn): attn_factor {}, beta_fast {}, beta_slow {}, original context {} "
        "must be positive",
        c.rope_attn_factor, c.rope_yarn_beta_fast, c.rope_yarn_beta_slow, c.rope_yarn_orig_ctx);
  }
  if (!(c.rms_norm_eps >= 0) || c.rms_norm_eps > 1) {
    return invalid_argument("attention.layer_norm_rms_epsilon {} is out of range", c.rms_norm_eps);
  }
  if (c.num_experts < 0 || c.num_experts > kMaxExperts) {
    return invalid_argument("expert_count {} is out of range", c.num_experts);
  }
  if (c.num_experts > 0 && (c.num_experts_used <= 0 || c.num_experts_used > c.num_experts)) {
    return invalid_argument("expert_used_count {} must be in [1, expert_count {}]",
                            c.num_experts_used, c.num_experts);
  }
  return Status();
}

void extend_yarn_context(ModelConfig& c, double factor) {
  const double scaled = std::floor(static_cast<double>(c.rope_yarn_orig_ctx) * factor);
  if (scaled > c.context_length && scaled <= kMaxContext) {
    c.context_length = static_cast<int32_t>(scaled);
  }
}

namespace {

// YaRN's keys (as llama.cpp reads them): original_context_length (default: context_length),
// attn_factor (1), yarn_beta_fast / yarn_beta_slow (32 / 1); ext_factor is 1.
Status read_yarn(const format::GgufFile& f, const std::string& a, double factor, ModelConfig& c) {
  c.rope_ext_factor = 1.0f;
  c.rope_yarn_orig_ctx = c.context_length;
  if (f.find(a + "rope.scaling.original_context_length") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.rope_yarn_orig_ctx,
                            get_count(f, a + "rope.scaling.original_context_length", kMaxContext));
  }
  const auto read_float = [&](const std::string& key, float& out) -> Status {
    if (f.find(key) == nullptr) return Status();
    PAGODA_ASSIGN_OR_RETURN(double v, f.get_float(key));
    if (!(v > 0) || v > 1e6) return invalid_argument("{} {} is out of range", key, v);
    out = static_cast<float>(v);
    return Status();
  };
  PAGODA_RETURN_IF_ERROR(read_float(a + "rope.scaling.attn_factor", c.rope_attn_factor));
  PAGODA_RETURN_IF_ERROR(read_float(a + "rope.scaling.yarn_beta_fast", c.rope_yarn_beta_fast));
  PAGODA_RETURN_IF_ERROR(read_float(a + "rope.scaling.yarn_beta_slow", c.rope_yarn_beta_slow));
  extend_yarn_context(c, factor);
  if (f.find(a + "rope.scaling.yarn_log_multiplier") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(double mul, f.get_float(a + "rope.scaling.yarn_log_multiplier"));
    if (mul != 0.0) {
      return unimplemented("rope.scaling.yarn_log_multiplier {} is not supported yet", mul);
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

  PAGODA_ASSIGN_OR_RETURN(c.num_layers, get_count(f, a + "block_count", kMaxLayers));
  PAGODA_ASSIGN_OR_RETURN(c.hidden_dim, get_count(f, a + "embedding_length", kMaxHidden));
  PAGODA_ASSIGN_OR_RETURN(c.num_heads, get_count(f, a + "attention.head_count", kMaxHeads));
  PAGODA_ASSIGN_OR_RETURN(c.num_kv_heads,
                          get_count_or(f, a + "attention.head_count_kv", kMaxHeads, c.num_heads));
  PAGODA_ASSIGN_OR_RETURN(c.ffn_dim, get_count(f, a + "feed_forward_length", kMaxFfn));
  PAGODA_ASSIGN_OR_RETURN(c.context_length, get_count(f, a + "context_length", kMaxContext));
  if (c.hidden_dim % c.num_heads != 0 && f.find(a + "attention.key_length") == nullptr) {
    return invalid_argument("embedding_length {} is not a multiple of attention.head_count {}",
                            c.hidden_dim, c.num_heads);
  }
  PAGODA_ASSIGN_OR_RETURN(
      c.head_dim, get_count_or(f, a + "attention.key_length", 1024, c.hidden_dim / c.num_heads));
  if (f.find(a + "attention.value_length") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(int32_t v_dim, get_count(f, a + "attention.value_length", 1024));
    if (v_dim != c.head_dim) {
      return unimplemented("attention.value_length {} != key_length {}", v_dim, c.head_dim);
    }
  }
  PAGODA_ASSIGN_OR_RETURN(c.rope_dims,
                          get_count_or(f, a + "rope.dimension_count", 1024, c.head_dim));
  if (f.find(a + "rope.freq_base") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(double base, f.get_float(a + "rope.freq_base"));
    c.rope_theta = static_cast<float>(base);
  }
  if (f.find(a + "attention.layer_norm_rms_epsilon") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(double eps, f.get_float(a + "attention.layer_norm_rms_epsilon"));
    c.rms_norm_eps = static_cast<float>(eps);
  }
  // RoPE scaling: none, linear and yarn are applied here; Llama-3 style scaling arrives as the
  // rope_freqs.weight tensor (bound by the weights).
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
    if (!(factor > 0) || factor > 1e6) {
      return invalid_argument("rope.scaling.factor {} is out of range", factor);
    }
    c.rope_freq_scale = static_cast<float>(1.0 / factor);
  }
  if (scaling == "yarn") {
    PAGODA_RETURN_IF_ERROR(read_yarn(f, a, factor, c));
  } else if (scaling != "linear" && scaling != "none" && scaling != "llama3" && factor != 1.0) {
    return unimplemented("rope.scaling.type '{}' is not supported yet", scaling);
  }
  if (f.find(a + "expert_count") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.num_experts, get_count(f, a + "expert_count", kMaxExperts));
    PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, get_count(f, a + "expert_used_count", kMaxExperts));
  }
  // Vocab size: explicit key, else the tokenizer, else the embedding tensor.
  if (f.find(a + "vocab_size") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.vocab_size, get_count(f, a + "vocab_size", kMaxVocab));
  } else if (const auto* tokens = f.find("tokenizer.ggml.tokens"); tokens != nullptr) {
    if (tokens->count == 0 || tokens->count > static_cast<uint64_t>(kMaxVocab)) {
      return invalid_argument("tokenizer.ggml.tokens has {} entries", tokens->count);
    }
    c.vocab_size = static_cast<int32_t>(tokens->count);
  } else if (const auto* emb = f.find_tensor("token_embd.weight"); emb != nullptr) {
    if (emb->dims[1] == 0 || emb->dims[1] > static_cast<uint64_t>(kMaxVocab)) {
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

}  // namespace pagoda::model
