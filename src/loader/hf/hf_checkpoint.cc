#include "loader/hf/hf_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "base/log.h"
#include "kernels/quant.h"
#include "loader/hf/hf_bert.h"
#include "loader/hf/hf_families.h"
#include "loader/hf/quant_repack.h"
#include "model/arch/arch.h"

namespace pagoda::loader {
namespace {

namespace fs = std::filesystem;
using model::ArchDef;
using model::ModelConfig;
using L = model::ConfigLimits;

constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;

struct ArchMap {
  std::string_view hf;
  std::string_view model_type;
  std::string_view arch;
  bool experts;
};
constexpr ArchMap kArchMaps[] = {
    {"LlamaForCausalLM", "llama", "llama", false},
    {"MistralForCausalLM", "mistral", "llama", false},
    {"MixtralForCausalLM", "mixtral", "llama", true},
    {"Qwen2ForCausalLM", "qwen2", "qwen2", false},
    {"Phi3ForCausalLM", "phi3", "phi3", false},
    {"Gemma2ForCausalLM", "gemma2", "gemma2", false},
    {"Qwen2MoeForCausalLM", "qwen2_moe", "qwen2moe", false},
    {"DeepseekV2ForCausalLM", "deepseek_v2", "deepseek2", false},
    {"Qwen3ForCausalLM", "qwen3", "qwen3", false},
    {"Qwen3MoeForCausalLM", "qwen3_moe", "qwen3moe", false},
    {"Gemma3ForCausalLM", "gemma3_text", "gemma3", false},
    {"Gemma3ForConditionalGeneration", "gemma3", "gemma3", false},  // text_config; text only
    {"DeepseekV3ForCausalLM", "deepseek_v3", "deepseek2", false},
};

Result<int32_t> required_count(const std::optional<int64_t>& v, std::string_view field,
                               int64_t max) {
  if (!v) return invalid_argument("config.json: {} is missing", field);
  if (*v <= 0 || *v > max) {
    return invalid_argument("config.json: {} = {} is out of range [1, {}]", field, *v, max);
  }
  return static_cast<int32_t>(*v);
}

// GenerationDefaults from generation_config.json; out-of-range values are dropped with a warning
// (the model is still usable with the engine's defaults).
GenerationDefaults generation_defaults_from(const format::HfGenerationConfig& g) {
  GenerationDefaults d;
  auto keep_float = [](const std::optional<double>& v, std::string_view name, double lo, double hi,
                       bool lo_open, std::optional<float>& out) {
    if (!v) return;
    const bool ok = std::isfinite(*v) && (lo_open ? *v > lo : *v >= lo) && *v <= hi;
    if (!ok) {
      PAGODA_LOG_WARN("generation_config.json: {} = {} is out of range; ignored", name, *v);
      return;
    }
    out = static_cast<float>(*v);
  };
  d.do_sample = g.do_sample;
  keep_float(g.temperature, "temperature", 0.0, 1e6, false, d.temperature);
  keep_float(g.top_p, "top_p", 0.0, 1.0, true, d.top_p);
  keep_float(g.min_p, "min_p", 0.0, 1.0, false, d.min_p);
  keep_float(g.repetition_penalty, "repetition_penalty", 0.0, 1e6, true, d.repetition_penalty);
  if (g.top_k) {
    if (*g.top_k < 0 || *g.top_k > INT32_MAX) {
      PAGODA_LOG_WARN("generation_config.json: top_k = {} is out of range; ignored", *g.top_k);
    } else {
      d.top_k = static_cast<int32_t>(*g.top_k);
    }
  }
  if (g.max_new_tokens) {
    if (*g.max_new_tokens <= 0 || *g.max_new_tokens > INT32_MAX) {
      PAGODA_LOG_WARN("generation_config.json: max_new_tokens = {} is out of range; ignored",
                      *g.max_new_tokens);
    } else {
      d.max_new_tokens = static_cast<int32_t>(*g.max_new_tokens);
    }
  }
  for (int64_t id : g.eos_token_id) {
    if (id < 0 || id > INT32_MAX) {
      PAGODA_LOG_WARN("generation_config.json: eos_token_id {} is out of range; ignored", id);
      continue;
    }
    d.eos_token_ids.push_back(static_cast<int32_t>(id));
  }
  return d;
}

// rope_scaling type yarn: factor, original_max_position_embeddings (default: the context
// length), beta_fast / beta_slow (32 / 1), attention_factor (the whole cos/sin scale; GGUF's
// attn_factor multiplies ggml's 1 + 0.1 ln(factor), so it is stored divided by that).
// DeepSeek (deepseek2): mscale_all_dim becomes GGUF's yarn_log_multiplier (0.1 x it, as
// llama.cpp's converter writes it; arch/deepseek2.cc scales the attention scores by
// yarn_get_mscale(factor, mscale_all_dim)^2 and leaves cos/sin unscaled, which is DeepSeek's
// cos/sin factor yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim) only
// when mscale equals mscale_all_dim: other values, and mscale_all_dim absent, are refused).
// Other families: mscale / mscale_all_dim are refused.
Status yarn_from_hf(const format::HfRopeScaling& s, ModelConfig& c) {
  const double factor = s.factor.value_or(0.0);
  const int64_t orig = s.original_max_position_embeddings.value_or(c.context_length);
  const double fast = s.beta_fast.value_or(32.0), slow = s.beta_slow.value_or(1.0);
  if (!(factor > 0) || factor > L::kMaxRopeScaling || orig <= 0 || orig > L::kMaxContext ||
      !(fast > 0) || fast > L::kMaxRopeScaling || !(slow > 0) || slow > L::kMaxRopeScaling) {
    return invalid_argument(
        "config.json: rope_scaling (yarn) factor {}, original_max_position_embeddings {}, "
        "beta_fast {}, beta_slow {} are out of range",
        factor, orig, fast, slow);
  }
  if (c.arch == "deepseek2") {
    const double all = s.mscale_all_dim.value_or(0.0);
    const double mscale = s.mscale.value_or(1.0);
    if (!(all > 0) || all > L::kMaxRopeScaling) {
      return unimplemented(
          "config.json: rope_scaling (yarn) mscale_all_dim {} on DeepSeek: only a positive "
          "mscale_all_dim (at most {}) is supported",
          all, L::kMaxRopeScaling);
    }
    if (mscale != all) {
      return unimplemented(
          "config.json: rope_scaling (yarn) mscale {} differs from mscale_all_dim {} (scaled "
          "cos/sin): not supported",
          mscale, all);
    }
    if (s.attention_factor.has_value()) {
      return unimplemented(
          "config.json: rope_scaling.attention_factor on DeepSeek is not supported");
    }
    c.rope_yarn_log_mul = static_cast<float>(0.1 * all);
  } else if (s.mscale.has_value() || s.mscale_all_dim.has_value()) {
    return unimplemented(
        "config.json: rope_scaling (yarn) mscale / mscale_all_dim are not "
        "supported yet");
  }
  c.rope_freq_scale = static_cast<float>(1.0 / factor);
  c.rope_ext_factor = 1.0f;
  c.rope_orig_ctx = static_cast<int32_t>(orig);
  c.rope_yarn_beta_fast = static_cast<float>(fast);
  c.rope_yarn_beta_slow = static_cast<float>(slow);
  model::extend_yarn_context(c, factor);
  if (s.attention_factor.has_value()) {
    const double af = *s.attention_factor;
    if (!(af > 0) || af > L::kMaxRopeScaling) {
      return invalid_argument("config.json: rope_scaling.attention_factor {} is out of range", af);
    }
    c.rope_attn_factor = static_cast<float>(af / (1.0 + 0.1 * std::log(factor)));
  }
  return Status();
}

// rope_scaling type longrope (Phi-3's older name: su), as transformers' Phi-3 computes it
// (_compute_longrope_parameters): long_factor and short_factor, one divisor per rotated pair (the
// checkpoint's rope_factors_long/short tensors); the pretrained context from the top-level
// original_max_position_embeddings (Phi3Config's default 4096; rope_scaling's own when only it
// has one); the cos/sin scale rope_scaling.attention_factor, else sqrt(1 + ln(s) / ln(original))
// for s = max_position_embeddings / original when s > 1 (else 1), under both tables.
bool is_longrope(const format::HfRopeScaling& s) {
  return s.type == "longrope" || s.type == "su";
}

Status longrope_from_hf(const format::HfConfig& hf, const format::HfRopeScaling& s,
                        ModelConfig& c) {
  if (c.arch != "phi3") {
    return unimplemented("config.json: rope_scaling type \"{}\" is supported for Phi-3 only",
                         s.type);
  }
  if (s.mscale.has_value() || s.mscale_all_dim.has_value()) {
    return unimplemented("config.json: rope_scaling ({}) mscale / mscale_all_dim are not supported",
                         s.type);
  }
  const size_t pairs = static_cast<size_t>(c.rope_dims / 2);
  for (const auto& [name, factors] :
       {std::pair{"long_factor", &s.long_factor}, std::pair{"short_factor", &s.short_factor}}) {
    if (factors->size() != pairs) {
      return invalid_argument(
          "config.json: rope_scaling.{} has {} factors; the {} rotated dims of a head need {}",
          name, factors->size(), c.rope_dims, pairs);
    }
    for (double v : *factors) {
      if (!(v > 0) || v > 1e6) {
        return invalid_argument("config.json: rope_scaling.{} has factor {}", name, v);
      }
    }
  }
  const int64_t orig = hf.original_max_position_embeddings.value_or(
      s.original_max_position_embeddings.value_or(4096));
  if (orig <= 0 || orig > L::kMaxContext) {
    return invalid_argument("config.json: original_max_position_embeddings {} is out of range",
                            orig);
  }
  const double scale = static_cast<double>(c.context_length) / static_cast<double>(orig);
  double attention = 1.0;
  if (s.attention_factor.has_value()) {
    attention = *s.attention_factor;
  } else if (scale > 1.0) {
    attention = std::sqrt(1.0 + std::log(scale) / std::log(static_cast<double>(orig)));
  }
  if (!(attention > 0) || attention > L::kMaxRopeScaling) {
    return invalid_argument("config.json: rope_scaling ({}) attention factor {} is out of range",
                            s.type, attention);
  }
  c.rope_orig_ctx = static_cast<int32_t>(orig);
  c.rope_attn_factor = static_cast<float>(attention);
  return Status();
}

// A multimodal checkpoint's tensor as the text model names it: language_model.model.X and
// model.language_model.X become model.X, language_model.lm_head.X and lm_head.X become
// lm_head.X; nullopt for anything else (the vision tower, the projector).
std::optional<std::string> text_model_tensor_name(std::string_view name) {
  for (std::string_view prefix : {"language_model.model.", "model.language_model."}) {
    if (name.starts_with(prefix)) return "model." + std::string(name.substr(prefix.size()));
  }
  if (name.starts_with("language_model.lm_head.")) {
    return std::string(name.substr(std::string_view("language_model.").size()));
  }
  if (name.starts_with("lm_head.")) return std::string(name);
  return std::nullopt;
}

// A tensor of layer N in [num_layers, num_layers + mtp_layers): a multi-token-prediction layer.
bool is_mtp_tensor(std::string_view name, int32_t num_layers, int64_t mtp_layers) {
  constexpr std::string_view kLayers = "model.layers.";
  if (!name.starts_with(kLayers)) return false;
  name.remove_prefix(kLayers.size());
  const auto n = take_hf_index(name);
  return n && *n >= num_layers && *n < num_layers + mtp_layers;
}

}  // namespace

Result<std::string> read_model_file(const std::string& dir, const std::string& name,
                                    uint64_t max_bytes) {
  const fs::path path = fs::path(dir) / name;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return not_found("{}: no {}", dir, name);
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) return io_error("{}: {}", path.string(), ec.message());
  if (size > max_bytes) {
    return invalid_argument("{}: {} bytes, more than the {}-byte limit", path.string(), size,
                            max_bytes);
  }
  std::ifstream in(path, std::ios::binary);
  std::string out(static_cast<size_t>(size), '\0');
  if (!in.read(out.data(), static_cast<std::streamsize>(size))) {
    return io_error("{}: cannot read", path.string());
  }
  return out;
}

std::optional<std::string> gguf_name_of(std::string_view name, bool* skip, int32_t* layer,
                                        int32_t* expert, std::string_view arch) {
  *skip = false;
  *layer = -1;
  *expert = -1;
  if (arch == "bert") return bert_gguf_name(name, skip, layer);
  if (name == "model.embed_tokens.weight") return "token_embd.weight";
  if (name == "model.norm.weight") return "output_norm.weight";
  if (name == "lm_head.weight") return "output.weight";
  constexpr std::string_view kLayers = "model.layers.";
  if (!name.starts_with(kLayers)) return std::nullopt;
  std::string_view rest = name.substr(kLayers.size());
  const auto n = take_hf_index(rest);
  if (!n) return std::nullopt;
  *layer = *n;
  const std::string blk = "blk." + std::to_string(*n) + ".";
  if (auto family = family_layer_tensor_name(arch, rest, expert)) return blk + *family;
  struct Rename {
    std::string_view hf;
    std::string_view gguf;
  };
  static constexpr Rename kLayerNames[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.qkv_proj.weight", "attn_qkv.weight"},  // Phi-3: q, k, v rows fused
      {"mlp.gate_up_proj.weight", "ffn_up.weight"},      // Phi-3: gate rows, then up rows
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
  };
  for (const Rename& r : kLayerNames) {
    if (rest == r.hf) return blk + std::string(r.gguf);
  }
  if (rest == "self_attn.rotary_emb.inv_freq") {
    *skip = true;
    return std::nullopt;
  }
  constexpr std::string_view kExperts = "block_sparse_moe.experts.";
  if (rest.starts_with(kExperts)) {
    rest.remove_prefix(kExperts.size());
    const auto e = take_hf_index(rest);
    if (!e) return std::nullopt;
    *expert = *e;
    const std::string idx = "." + std::to_string(*e) + ".weight";
    if (rest == "w1.weight") return blk + "ffn_gate" + idx;
    if (rest == "w3.weight") return blk + "ffn_up" + idx;
    if (rest == "w2.weight") return blk + "ffn_down" + idx;
  }
  return std::nullopt;
}

std::vector<float> llama3_rope_factors(const format::HfRopeScaling& s, float rope_theta,
                                       int32_t rope_dims) {
  const float factor = static_cast<float>(s.factor.value_or(8.0));
  const float low = static_cast<float>(s.low_freq_factor.value_or(1.0));
  const float high = static_cast<float>(s.high_freq_factor.value_or(4.0));
  const float old_ctx = static_cast<float>(s.original_max_position_embeddings.value_or(8192));
  const float low_wavelen = old_ctx / low;
  const float high_wavelen = old_ctx / high;
  std::vector<float> out;
  for (int32_t i = 0; i < rope_dims; i += 2) {
    const float freq =
        1.0f / std::pow(rope_theta, static_cast<float>(i) / static_cast<float>(rope_dims));
    const float wavelen = 2.0f * static_cast<float>(M_PI) / freq;
    if (wavelen < high_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_wavelen) {
      out.push_back(factor);
    } else {
      const float smooth = (old_ctx / wavelen - low) / (high - low);
      out.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return out;
}

namespace {
Result<ModelConfig> model_config_from(const format::HfConfig& hf, const ArchMap& arch_map);

// Gemma3TextConfig's defaults (transformers) for the fields a Gemma 3 config may leave out.
void gemma3_text_defaults(format::HfConfig& hf) {
  auto fill = [](auto& field, auto value) {
    if (!field) field = value;
  };
  fill(hf.vocab_size, int64_t{262208});
  fill(hf.hidden_size, int64_t{2304});
  fill(hf.intermediate_size, int64_t{9216});
  fill(hf.num_hidden_layers, int64_t{26});
  fill(hf.num_attention_heads, int64_t{8});
  fill(hf.num_key_value_heads, int64_t{4});
  fill(hf.head_dim, int64_t{256});
  fill(hf.max_position_embeddings, int64_t{131072});
  fill(hf.rms_norm_eps, 1e-6);
  fill(hf.rope_theta, 1000000.0);
}
}  // namespace

Result<ModelConfig> model_config_from_hf(const format::HfConfig& hf, std::string* architecture) {
  if (is_hf_bert(hf)) return bert_config_from_hf(hf, architecture);  // an encoder (hf_bert.h)
  const ArchMap* map = nullptr;
  for (const ArchMap& m : kArchMaps) {
    const bool by_arch = !hf.architectures.empty() && hf.architectures.front() == m.hf;
    const bool by_type = hf.architectures.empty() && hf.model_type == m.model_type;
    if (by_arch || by_type) map = &m;
  }
  if (map == nullptr) {
    const std::string got =
        hf.architectures.empty() ? "model_type " + hf.model_type : hf.architectures.front();
    return unimplemented(
        "config.json: architecture {} is not supported (LlamaForCausalLM, MistralForCausalLM, "
        "MixtralForCausalLM, Qwen2ForCausalLM, Phi3ForCausalLM, Gemma2ForCausalLM, "
        "Qwen2MoeForCausalLM, DeepseekV2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
        "Gemma3ForCausalLM, Gemma3ForConditionalGeneration (text), DeepseekV3ForCausalLM are)",
        got.empty() ? "(none)" : got);
  }
  if (architecture != nullptr) *architecture = std::string(map->hf);
  PAGODA_RETURN_IF_ERROR(check_hf_activation(hf, map->arch));
  if (hf.mlp_bias.value_or(false)) return unimplemented("config.json: mlp_bias is not supported");
  if ((map->arch == "llama" || map->arch == "qwen3" || map->arch == "qwen3moe" ||
       map->arch == "gemma3") &&
      hf.attention_bias.value_or(false)) {
    return unimplemented("config.json: attention_bias (biased o_proj) is not supported");
  }

  if (map->arch == "gemma3") {
    // Gemma 3's multimodal configs leave most text fields at Gemma3TextConfig's defaults.
    format::HfConfig with_defaults = hf;
    gemma3_text_defaults(with_defaults);
    return model_config_from(with_defaults, *map);
  }
  return model_config_from(hf, *map);
}

namespace {

// The window of the families that state one for every layer, as transformers applies it:
// Phi-3, Mistral and Mixtral: `sliding_window` (null: none); Qwen2: `sliding_window` only with
// `use_sliding_window`, on the layers from `max_window_layers` on (all of them, or none, are
// what a single window can state; a split is refused by name). LlamaConfig has no window: a
// stray `sliding_window` there is ignored, as transformers does. Gemma 2/3 (local and global
// layers) are hf_families.cc's.
Status uniform_window_from_hf(const format::HfConfig& hf, const ArchMap& map, ModelConfig& c) {
  if (!hf.sliding_window) return Status();
  const int64_t w = *hf.sliding_window;
  const auto apply = [&]() -> Status {
    if (w < 1 || w > L::kMaxContext) {
      return invalid_argument("config.json: sliding_window {} is out of range [1, {}]", w,
                              L::kMaxContext);
    }
    c.sliding_window = static_cast<int32_t>(w);
    c.sliding_layers = model::SlidingLayers::kAll;
    return Status();
  };
  if (map.arch == "phi3") return w > 0 ? apply() : Status();  // Phi-4: 0 or null
  if (map.hf == "MistralForCausalLM" || map.hf == "MixtralForCausalLM") return apply();
  const bool qwen = map.arch == "qwen2" || map.arch == "qwen2moe" || map.arch == "qwen3" ||
                    map.arch == "qwen3moe";
  if (!qwen || !hf.use_sliding_window.value_or(false)) return Status();
  // Qwen2Config: layer i slides when i >= max_window_layers (default 28).
  const int64_t first = hf.max_window_layers.value_or(28);
  if (first < 0) {
    return invalid_argument("config.json: max_window_layers {} is negative", first);
  }
  if (first >= c.num_layers) return Status();  // no layer slides
  if (first > 0) {
    return unimplemented(
        "config.json: use_sliding_window with max_window_layers {} (layers {}..{} slide, the "
        "first {} do not) is not supported: only every layer or none",
        first, first, c.num_layers - 1, first);
  }
  if (map.arch != "qwen2") {
    return unimplemented("config.json: use_sliding_window is not supported for {} (qwen2 has it)",
                         map.arch);
  }
  return apply();
}

Result<ModelConfig> model_config_from(const format::HfConfig& hf, const ArchMap& arch_map) {
  const ArchMap* map = &arch_map;
  ModelConfig c;
  c.arch = std::string(map->arch);
  c.name = hf.name_or_path.value_or("");
  PAGODA_ASSIGN_OR_RETURN(c.num_layers,
                          required_count(hf.num_hidden_layers, "num_hidden_layers", L::kMaxLayers));
  PAGODA_ASSIGN_OR_RETURN(c.hidden_dim,
                          required_count(hf.hidden_size, "hidden_size", L::kMaxHidden));
  PAGODA_ASSIGN_OR_RETURN(
      c.num_heads, required_count(hf.num_attention_heads, "num_attention_heads", L::kMaxHeads));
  if (hf.num_key_value_heads) {
    PAGODA_ASSIGN_OR_RETURN(c.num_kv_heads, required_count(hf.num_key_value_heads,
                                                           "num_key_value_heads", L::kMaxHeads));
  } else {
    c.num_kv_heads = c.num_heads;
  }
  if (hf.head_dim) {
    PAGODA_ASSIGN_OR_RETURN(c.head_dim, required_count(hf.head_dim, "head_dim", L::kMaxHeadDim));
  } else {
    if (c.hidden_dim % c.num_heads != 0) {
      return invalid_argument(
          "config.json: hidden_size {} is not a multiple of "
          "num_attention_heads {}",
          c.hidden_dim, c.num_heads);
    }
    c.head_dim = c.hidden_dim / c.num_heads;
  }
  PAGODA_ASSIGN_OR_RETURN(c.ffn_dim,
                          required_count(hf.intermediate_size, "intermediate_size", L::kMaxFfn));
  PAGODA_ASSIGN_OR_RETURN(c.vocab_size, required_count(hf.vocab_size, "vocab_size", L::kMaxVocab));
  PAGODA_ASSIGN_OR_RETURN(
      c.context_length,
      required_count(hf.max_position_embeddings, "max_position_embeddings", L::kMaxContext));
  const double eps = hf.rms_norm_eps.value_or(1e-6);
  if (!(eps >= 0) || eps > L::kMaxRmsNormEps) {
    return invalid_argument("config.json: rms_norm_eps {} is out of range [0, {}]", eps,
                            L::kMaxRmsNormEps);
  }
  c.rms_norm_eps = static_cast<float>(eps);
  const double theta = hf.rope_theta.value_or(10000.0);
  if (!(theta > 0) || theta > L::kMaxRopeTheta) {
    return invalid_argument("config.json: rope_theta {} is out of range (0, {}]", theta,
                            L::kMaxRopeTheta);
  }
  c.rope_theta = static_cast<float>(theta);
  c.rope_dims = c.head_dim;
  if (hf.partial_rotary_factor) {
    // The first int(head_dim x factor) dims of each head rotate (Phi-4-mini: 0.75); validate_config
    // checks the count is even.
    const double part = *hf.partial_rotary_factor;
    if (!(part > 0) || part > 1) {
      return invalid_argument("config.json: partial_rotary_factor {} is out of range (0, 1]", part);
    }
    if (part != 1.0 && map->arch != "phi3") {
      return unimplemented(
          "config.json: partial_rotary_factor {} is not supported for {} (phi3 has it)", part,
          map->arch);
    }
    c.rope_dims = static_cast<int32_t>(static_cast<double>(c.head_dim) * part);
  }
  if (map->experts) {
    PAGODA_ASSIGN_OR_RETURN(
        c.num_experts, required_count(hf.num_local_experts, "num_local_experts", L::kMaxExperts));
    PAGODA_ASSIGN_OR_RETURN(
        c.num_experts_used,
        required_count(hf.num_experts_per_tok, "num_experts_per_tok", L::kMaxExperts));
  }
  PAGODA_RETURN_IF_ERROR(uniform_window_from_hf(hf, *map, c));

  PAGODA_RETURN_IF_ERROR(hf_family_config(hf, c));
  // Rope scaling before the arch's configure, which may depend on it (deepseek2's YaRN).
  if (hf.rope_scaling) {
    const format::HfRopeScaling& s = *hf.rope_scaling;
    if (s.type == "linear") {
      const double factor = s.factor.value_or(0.0);
      if (!(factor > 0) || factor > L::kMaxRopeScaling) {
        return invalid_argument("config.json: rope_scaling.factor {} is out of range", factor);
      }
      c.rope_freq_scale = static_cast<float>(1.0 / factor);
    } else if (s.type == "llama3") {
      const double factor = s.factor.value_or(8.0);
      const double low = s.low_freq_factor.value_or(1.0);
      const double high = s.high_freq_factor.value_or(4.0);
      const int64_t old_ctx = s.original_max_position_embeddings.value_or(8192);
      if (!(factor > 0) || factor > L::kMaxRopeScaling || !(low > 0) || !(high > low) ||
          high > L::kMaxRopeScaling || old_ctx <= 0 || old_ctx > L::kMaxContext) {
        return invalid_argument(
            "config.json: rope_scaling (llama3) factor {}, low_freq_factor "
            "{}, high_freq_factor {}, original_max_position_embeddings {} "
            "are out of range",
            factor, low, high, old_ctx);
      }
    } else if (s.type == "yarn") {
      PAGODA_RETURN_IF_ERROR(yarn_from_hf(s, c));
    } else if (is_longrope(s)) {
      PAGODA_RETURN_IF_ERROR(longrope_from_hf(hf, s, c));
    } else if (s.type != "default" && s.type != "none") {
      return unimplemented(
          "config.json: rope_scaling type \"{}\" is not supported (linear, "
          "llama3, yarn, longrope are)",
          s.type);
    }
  }

  const ArchDef* arch = model::find_arch(c.arch);
  if (arch == nullptr) return internal_error("architecture {} is not registered", c.arch);
  PAGODA_RETURN_IF_ERROR(arch->configure(c));
  PAGODA_RETURN_IF_ERROR(hf_family_finish(hf, c));
  PAGODA_RETURN_IF_ERROR(model::validate_config(c));

  return c;
}

}  // namespace

bool HfCheckpoint::is_model_dir(const std::string& path) {
  std::error_code ec;
  return fs::is_directory(path, ec) && fs::is_regular_file(fs::path(path) / "config.json", ec);
}

Result<std::unique_ptr<HfCheckpoint>> HfCheckpoint::open(const std::string& dir) {
  std::unique_ptr<HfCheckpoint> ck(new HfCheckpoint());
  ck->dir_ = dir;
  auto with_dir = [&dir](Status s) { return s.with_context(dir); };
  auto text = read_model_file(dir, "config.json", kMaxConfigBytes);
  if (!text.ok()) return text.status();
  auto hf = format::parse_hf_config(*text);
  if (!hf.ok()) return with_dir(hf.status());
  ck->hf_config_ = std::move(hf).value();
  auto quant = format::parse_hf_quant_config(*text);
  if (!quant.ok()) return with_dir(quant.status());
  ck->quant_config_ = std::move(quant).value();
  auto config = model_config_from_hf(ck->hf_config_, &ck->architecture_);
  if (!config.ok()) return with_dir(config.status());
  ck->config_ = std::move(config).value();
  if (ck->config_.name.empty()) ck->config_.name = fs::path(dir).filename().string();

  auto gen_text = read_model_file(dir, "generation_config.json", kMaxConfigBytes);
  if (gen_text.ok()) {
    auto gen = format::parse_hf_generation_config(*gen_text);
    if (!gen.ok()) return with_dir(gen.status());
    ck->generation_ = generation_defaults_from(*gen);
  } else if (gen_text.status().code() != StatusCode::kNotFound) {
    return gen_text.status();
  }
  if (ck->generation_.eos_token_ids.empty()) {
    for (int64_t id : ck->hf_config_.eos_token_id) {
      if (id >= 0 && id <= INT32_MAX)
        ck->generation_.eos_token_ids.push_back(static_cast<int32_t>(id));
    }
  }

  PAGODA_RETURN_IF_ERROR(ck->open_shards());
  Status st = ck->map_tensors();
  if (!st.ok()) return with_dir(st);
  return ck;
}

Status HfCheckpoint::open_shards() {
  std::error_code ec;
  std::vector<std::string> files;
  if (fs::is_regular_file(fs::path(dir_) / "model.safetensors", ec)) {
    files.push_back("model.safetensors");
  } else {
    auto text = read_model_file(dir_, "model.safetensors.index.json", uint64_t{256} << 20);
    if (!text.ok()) {
      if (text.status().code() != StatusCode::kNotFound) return text.status();
      return not_found(
          "{}: no model.safetensors or model.safetensors.index.json (only "
          "safetensors weights are supported)",
          dir_);
    }
    auto index = format::parse_hf_weight_index(*text);
    if (!index.ok()) return index.status().with_context(dir_);
    index_ = std::move(index).value();
    files = index_->shards;
    if (files.empty())
      return invalid_argument("{}: model.safetensors.index.json lists no files", dir_);
  }
  for (const std::string& f : files) {
    auto shard = format::SafetensorsFile::open((fs::path(dir_) / f).string());
    if (!shard.ok()) return shard.status();
    shards_.push_back(std::shared_ptr<const format::SafetensorsFile>(std::move(shard).value()));
  }
  return Status();
}

int64_t HfCheckpoint::max_matrix_elements() const {
  const int64_t q = int64_t{config_.num_heads} * config_.head_dim;
  const int64_t wide = std::max({int64_t{config_.vocab_size}, int64_t{2} * config_.ffn_dim, 3 * q,
                                 int64_t{config_.hidden_dim}});
  const int64_t narrow = std::max({int64_t{config_.hidden_dim}, int64_t{config_.ffn_dim}, q});
  return wide * narrow;  // each below 2^31 (ConfigLimits): no overflow
}

Status HfCheckpoint::map_tensors() {
  std::unordered_map<std::string, size_t> by_hf_name;
  std::unordered_map<std::string_view, const format::StTensor*> all_tensors;
  std::vector<std::string> companions, used;
  if (quant_config_) {
    for (const auto& shard : shards_) {
      for (const format::StTensor& t : shard->tensors())
        all_tensors.emplace(t.name, &t);
    }
  }
  const StTensorLookup lookup = [&all_tensors](std::string_view name) {
    auto it = all_tensors.find(name);
    return it == all_tensors.end() ? nullptr : it->second;
  };
  // DeepSeek-V3's multi-token-prediction layers follow the decoder's as model.layers.N with
  // N >= num_hidden_layers: not run, so not mapped.
  int64_t mtp_layers = 0;
  if (config_.arch == "deepseek2" && hf_config_.num_nextn_predict_layers) {
    mtp_layers = *hf_config_.num_nextn_predict_layers;
    if (mtp_layers < 0 || mtp_layers > L::kMaxLayers) {
      return invalid_argument("config.json: num_nextn_predict_layers {} is out of range [0, {}]",
                              mtp_layers, L::kMaxLayers);
    }
  }
  size_t mtp_skipped = 0, vision_skipped = 0;
  for (size_t s = 0; s < shards_.size(); ++s) {
    const format::SafetensorsFile& shard = *shards_[s];
    const std::string file = fs::path(shard.name()).filename().string();
    for (const format::StTensor& t : shard.tensors()) {
      bool skip = false;
      HfTensor out;
      std::string quant_prefix;
      if (quant_config_) {
        quant_prefix = quantized_linear_prefix(*quant_config_, t);
        if (quant_prefix.empty() && is_quant_companion(*quant_config_, t.name)) {
          companions.push_back(t.name);
          continue;
        }
      }
      std::string hf_name = quant_prefix.empty() ? t.name : quant_prefix + ".weight";
      if (hf_config_.from_text_config) {
        // A multimodal checkpoint: the language model's tensors under language_model.* (or
        // model.language_model.*); the vision tower and projector are skipped (text only).
        auto text = text_model_tensor_name(hf_name);
        if (!text) {
          ++vision_skipped;
          by_hf_name.emplace(t.name, SIZE_MAX);
          continue;
        }
        hf_name = std::move(*text);
      }
      if (mtp_layers > 0 && is_mtp_tensor(hf_name, config_.num_layers, mtp_layers)) {
        ++mtp_skipped;
        by_hf_name.emplace(t.name, SIZE_MAX);
        continue;
      }
      auto gguf = gguf_name_of(hf_name, &skip, &out.layer, &out.expert, config_.arch);
      if (skip) continue;
      if (!gguf) {
        return unimplemented("{}: tensor \"{}\" has no equivalent in pagoda's {} model", file,
                             t.name, config_.arch);
      }
      if (out.layer >= config_.num_layers) {
        return invalid_argument("{}: tensor \"{}\" names layer {} of a {}-layer model", file,
                                t.name, out.layer, config_.num_layers);
      }
      if (out.expert >= 0 && out.expert >= config_.num_experts) {
        return invalid_argument("{}: tensor \"{}\" names expert {} of {}", file, t.name, out.expert,
                                config_.num_experts);
      }
      out.gguf_name = std::move(*gguf);
      out.hf_name = hf_name;
      if (!quant_prefix.empty()) {
        auto repacked = repack_quantized_linear(*quant_config_, quant_prefix, lookup,
                                                max_matrix_elements(), &used);
        if (!repacked.ok()) {
          return repacked.status().with_context(
              fmt::format("{}: {} weight \"{}\"", file,
                          format::hf_quant_method_name(quant_config_->method), hf_name));
        }
        out.dtype = repacked->dtype;
        out.n_dims = 2;
        out.dims[0] = repacked->cols;
        out.dims[1] = repacked->rows;
        repacked_.push_back(std::move(repacked->bytes));
        out.data = repacked_.back().data();
        out.size_bytes = repacked_.back().size();
        const bool table = out.gguf_name.find("embd") != std::string::npos ||
                           out.gguf_name.starts_with("token_types");
        if (table && (!repacked->input_order.empty() || !repacked->zero_term.empty())) {
          return unimplemented(
              "{}: {} weight \"{}\" is a lookup table with act-order or zero points, which pagoda "
              "does not support",
              file, format::hf_quant_method_name(quant_config_->method), hf_name);
        }
        if (!repacked->input_order.empty()) {
          input_orders_.push_back(std::move(repacked->input_order));
          out.input_order = input_orders_.back().data();
        }
        if (!repacked->zero_term.empty()) {
          zero_terms_.push_back(std::move(repacked->zero_term));
          out.zero_term = zero_terms_.back().data();
          out.zero_group = repacked->zero_group;
        }
      } else {
        auto dtype = format::SafetensorsFile::compute_dtype(t);
        if (!dtype.ok()) return dtype.status().with_context(file);
        if (t.shape.size() > 4) {
          return unimplemented("{}: tensor \"{}\" has {} dims (at most 4 are supported)", file,
                               t.name, t.shape.size());
        }
        out.dtype = *dtype;
        out.n_dims = t.shape.empty() ? 1 : static_cast<int32_t>(t.shape.size());
        for (size_t i = 0; i < t.shape.size(); ++i) {
          const uint64_t d = t.shape[t.shape.size() - 1 - i];
          if (d > static_cast<uint64_t>(INT64_MAX)) {
            return invalid_argument("{}: tensor \"{}\" has dim {}", file, t.name, d);
          }
          out.dims[i] = static_cast<int64_t>(d);
        }
        out.data = t.data;
        out.size_bytes = t.size_bytes();
      }
      if (hf_norm_adds_one(config_.arch, out.gguf_name)) {
        PAGODA_RETURN_IF_ERROR(add_one(out));
      }
      if (index_) {
        auto it = index_->tensor_to_file.find(t.name);
        if (it == index_->tensor_to_file.end()) {
          PAGODA_LOG_WARN("{}: tensor \"{}\" is not in model.safetensors.index.json", file, t.name);
        } else if (it->second != file) {
          return invalid_argument(
              "tensor \"{}\" is in {} but model.safetensors.index.json "
              "says {}",
              t.name, file, it->second);
        }
      }
      if (auto [it, fresh] = by_hf_name.emplace(t.name, tensors_.size()); !fresh) {
        return invalid_argument("tensor \"{}\" is in more than one file", t.name);
      }
      tensors_.push_back(std::move(out));
    }
  }
  if (vision_skipped > 0) {
    PAGODA_LOG_INFO("{}: {} vision tower / projector tensors skipped (text only)", dir_,
                    vision_skipped);
  }
  if (mtp_skipped > 0) {
    PAGODA_LOG_INFO("{}: {} tensors of the {} multi-token-prediction layer(s) are not used", dir_,
                    mtp_skipped, mtp_layers);
  }
  for (const std::string& c : companions) {
    by_hf_name.emplace(c, SIZE_MAX);
    if (std::find(used.begin(), used.end(), c) == used.end()) {
      return invalid_argument("tensor \"{}\" belongs to no quantised weight", c);
    }
  }
  if (index_) {
    for (const auto& [name, file] : index_->tensor_to_file) {
      if (!by_hf_name.contains(name)) {
        return invalid_argument(
            "model.safetensors.index.json lists \"{}\" in {}, which does not "
            "hold it",
            name, file);
      }
    }
  }
  if (hf_config_.rope_scaling && hf_config_.rope_scaling->type == "llama3") {
    rope_freq_factors_ =
        llama3_rope_factors(*hf_config_.rope_scaling, config_.rope_theta, config_.rope_dims);
    add_f32_tensor("rope_freqs.weight", rope_freq_factors_);
  }
  if (hf_config_.rope_scaling && is_longrope(*hf_config_.rope_scaling)) {
    // LongRoPE's tables as llama.cpp's converter writes them (F32; the decoder picks one).
    for (const auto& [name, factors] :
         {std::pair{"rope_factors_long.weight", &hf_config_.rope_scaling->long_factor},
          std::pair{"rope_factors_short.weight", &hf_config_.rope_scaling->short_factor}}) {
      owned_.emplace_back(factors->begin(), factors->end());
      add_f32_tensor(name, owned_.back());
    }
  }
  if (hf_config_.rope_scaling && hf_config_.rope_scaling->type == "linear") {
    rope_linear_factor_ = 1.0 / config_.rope_freq_scale;
  }
  if (config_.arch == "bert" && find("cls.output.weight") == nullptr) {
    // A BERT without a classifier: its pooler is unused (hf_bert.h).
    std::erase_if(tensors_, [](const HfTensor& t) { return t.gguf_name.starts_with("cls."); });
  }
  config_.tied_embeddings = find("output.weight") == nullptr;
  if (config_.tied_embeddings && hf_config_.tie_word_embeddings.has_value() &&
      !*hf_config_.tie_word_embeddings) {
    return not_found("lm_head.weight is missing and tie_word_embeddings is false");
  }
  return Status();
}

Status HfCheckpoint::add_one(HfTensor& t) {
  if (t.n_dims != 1 || t.dims[0] <= 0 || t.dims[0] > L::kMaxHidden) {
    return invalid_argument("tensor \"{}\" is a norm weight but has {} dims (first {})", t.hf_name,
                            t.n_dims, t.dims[0]);
  }
  if (!kernels::can_dequantize(t.dtype)) {
    return unimplemented("tensor \"{}\" has type {}, which a norm weight cannot have", t.hf_name,
                         tensor::dtype_name(t.dtype));
  }
  std::vector<float> values(static_cast<size_t>(t.dims[0]));
  kernels::dequantize_row(t.dtype, t.data, values.data(), t.dims[0]);
  for (float& v : values)
    v += 1.0f;
  t.dtype = tensor::DType::kF32;
  t.data = reinterpret_cast<const uint8_t*>(values.data());
  t.size_bytes = values.size() * sizeof(float);
  owned_.push_back(std::move(values));  // the buffer moves with the vector: t.data stays valid
  return Status();
}

void HfCheckpoint::add_f32_tensor(std::string name, const std::vector<float>& values) {
  HfTensor r;
  r.gguf_name = std::move(name);
  r.dtype = tensor::DType::kF32;
  r.n_dims = 1;
  r.dims[0] = static_cast<int64_t>(values.size());
  r.data = reinterpret_cast<const uint8_t*>(values.data());
  r.size_bytes = values.size() * sizeof(float);
  tensors_.push_back(std::move(r));
}

const HfTensor* HfCheckpoint::find(std::string_view gguf_name) const {
  for (const HfTensor& t : tensors_) {
    if (t.gguf_name == gguf_name) return &t;
  }
  return nullptr;
}

std::unique_ptr<model::TensorSource> make_hf_tensor_source(
    std::shared_ptr<const HfCheckpoint> checkpoint) {
  std::vector<model::TensorRef> refs;
  refs.reserve(checkpoint->tensors().size());
  for (const HfTensor& t : checkpoint->tensors()) {
    model::TensorRef r;
    r.name = t.gguf_name;
    r.dtype = t.dtype;
    r.n_dims = t.n_dims;
    for (int i = 0; i < 4; ++i)
      r.dims[i] = t.dims[i];
    r.data = t.data;
    r.size_bytes = t.size_bytes;
    r.input_order = t.input_order;
    r.zero_term = t.zero_term;
    r.zero_group = t.zero_group;
    refs.push_back(r);
  }
  return std::make_unique<model::RefTensorSource>(std::move(refs), std::move(checkpoint));
}

}  // namespace pagoda::loader
