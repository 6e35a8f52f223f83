#include "loader/hf/hf_families.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace pagoda::loader {
namespace {

using model::ModelConfig;
using L = model::ConfigLimits;

bool is_gemma(std::string_view arch) {
  return arch == "gemma2" || arch == "gemma3";
}
bool is_qwen_moe(std::string_view arch) {
  return arch == "qwen2moe" || arch == "qwen3moe";
}
bool is_deepseek_v3(const format::HfConfig& hf) {
  return hf.architectures.empty() ? hf.model_type == "deepseek_v3"
                                  : hf.architectures.front() == "DeepseekV3ForCausalLM";
}

// A count field in [lo, max]; `fallback` when absent (nullopt: required).
Result<int32_t> count_field(const std::optional<int64_t>& v, std::string_view field, int64_t lo,
                            int64_t max, std::optional<int64_t> fallback = std::nullopt) {
  if (!v && !fallback) return invalid_argument("config.json: {} is missing", field);
  const int64_t x = v ? *v : *fallback;
  if (x < lo || x > max) {
    return invalid_argument("config.json: {} = {} is out of range [{}, {}]", field, x, lo, max);
  }
  return static_cast<int32_t>(x);
}

// A positive scale field in (0, kMaxScale]; `fallback` when absent.
Result<float> scale_field(const std::optional<double>& v, std::string_view field, double fallback) {
  const double x = v.value_or(fallback);
  if (!(x > 0) || x > L::kMaxScale) {
    return invalid_argument("config.json: {} = {} is out of range (0, {}]", field, x, L::kMaxScale);
  }
  return static_cast<float>(x);
}

// Gemma3TextConfig: no soft-caps unless stated, window 4096, one global layer in 6
// (sliding_window_pattern, or the layer_types list, which must follow such a pattern), local
// rope base rope_local_base_freq (10000).
Status gemma3_config(const format::HfConfig& hf, ModelConfig& c) {
  if (hf.attn_logit_softcapping) {
    PAGODA_ASSIGN_OR_RETURN(c.attn_softcap,
                            scale_field(hf.attn_logit_softcapping, "attn_logit_softcapping", 0.0));
  }
  if (hf.final_logit_softcapping) {
    PAGODA_ASSIGN_OR_RETURN(
        c.final_softcap, scale_field(hf.final_logit_softcapping, "final_logit_softcapping", 0.0));
  }
  PAGODA_ASSIGN_OR_RETURN(
      c.sliding_window, count_field(hf.sliding_window, "sliding_window", 1, L::kMaxContext, 4096));
  PAGODA_ASSIGN_OR_RETURN(c.sliding_pattern,
                          count_field(hf.sliding_window_pattern, "sliding_window_pattern", 1,
                                      int64_t{c.num_layers} + 1, 6));
  if (!hf.layer_types.empty()) {
    // The newer form: one entry per layer. Its period is the first global layer's index + 1.
    if (hf.layer_types.size() != static_cast<size_t>(c.num_layers)) {
      return invalid_argument("config.json: layer_types has {} entries for {} layers",
                              hf.layer_types.size(), c.num_layers);
    }
    int32_t first_global = c.num_layers;
    for (size_t i = 0; i < hf.layer_types.size(); ++i) {
      const std::string& t = hf.layer_types[i];
      if (t != "sliding_attention" && t != "full_attention") {
        return unimplemented("config.json: layer_types[{}] \"{}\" is not supported", i, t);
      }
      if (t == "full_attention" && first_global == c.num_layers) {
        first_global = static_cast<int32_t>(i);
      }
    }
    c.sliding_pattern = first_global + 1;
    for (size_t i = 0; i < hf.layer_types.size(); ++i) {
      const bool sliding = (static_cast<int32_t>(i) + 1) % c.sliding_pattern != 0;
      if (sliding != (hf.layer_types[i] == "sliding_attention")) {
        return unimplemented(
            "config.json: layer_types is not one global layer every {} (layer {} is \"{}\")",
            c.sliding_pattern, i, hf.layer_types[i]);
      }
    }
  }
  const double local = hf.rope_local_base_freq.value_or(10000.0);
  if (!(local > 0) || local > L::kMaxRopeTheta) {
    return invalid_argument("config.json: rope_local_base_freq {} is out of range (0, {}]", local,
                            L::kMaxRopeTheta);
  }
  c.rope_local_theta = static_cast<float>(local);
  return Status();
}

Status gemma_config(const format::HfConfig& hf, ModelConfig& c) {
  if (c.arch == "gemma3") return gemma3_config(hf, c);
  // Gemma2Config's defaults for absent fields (null counts as absent).
  PAGODA_ASSIGN_OR_RETURN(c.attn_softcap,
                          scale_field(hf.attn_logit_softcapping, "attn_logit_softcapping", 50.0));
  PAGODA_ASSIGN_OR_RETURN(c.final_softcap,
                          scale_field(hf.final_logit_softcapping, "final_logit_softcapping", 30.0));
  PAGODA_ASSIGN_OR_RETURN(
      c.sliding_window, count_field(hf.sliding_window, "sliding_window", 1, L::kMaxContext, 4096));
  return Status();
}

Status qwen_moe_config(const format::HfConfig& hf, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.num_experts,
                          count_field(hf.num_experts, "num_experts", 1, L::kMaxExperts));
  PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, count_field(hf.num_experts_per_tok,
                                                          "num_experts_per_tok", 1, c.num_experts));
  PAGODA_ASSIGN_OR_RETURN(c.expert_ffn_dim, count_field(hf.moe_intermediate_size,
                                                        "moe_intermediate_size", 1, L::kMaxFfn));
  if (c.arch == "qwen2moe") {
    PAGODA_ASSIGN_OR_RETURN(c.shared_expert_ffn_dim,
                            count_field(hf.shared_expert_intermediate_size,
                                        "shared_expert_intermediate_size", 1, L::kMaxFfn));
  } else if (hf.shared_expert_intermediate_size.value_or(0) > 0) {
    return unimplemented("config.json: shared_expert_intermediate_size on {} is not supported",
                         c.arch);
  }
  // Qwen2MoeConfig / Qwen3MoeConfig: layer i has experts unless it is in mlp_only_layers or
  // (i + 1) is not a multiple of decoder_sparse_step; those layers have a dense intermediate_size
  // FFN.
  PAGODA_ASSIGN_OR_RETURN(
      const int32_t step,
      count_field(hf.decoder_sparse_step, "decoder_sparse_step", 1, c.num_layers, 1));
  for (int64_t layer : hf.mlp_only_layers) {
    if (layer < 0 || layer >= c.num_layers) {
      return invalid_argument("config.json: mlp_only_layers has {}, not a layer of {}", layer,
                              c.num_layers);
    }
  }
  c.dense_layers.clear();
  for (int32_t i = 0; i < c.num_layers; ++i) {
    const bool listed = std::find(hf.mlp_only_layers.begin(), hf.mlp_only_layers.end(), i) !=
                        hf.mlp_only_layers.end();
    if (listed || (i + 1) % step != 0) c.dense_layers.push_back(i);
  }
  return Status();
}

Status deepseek_config(const format::HfConfig& hf, ModelConfig& c) {
  PAGODA_ASSIGN_OR_RETURN(c.q_lora_rank,
                          count_field(hf.q_lora_rank, "q_lora_rank", 0, L::kMaxHidden, 0));
  PAGODA_ASSIGN_OR_RETURN(c.kv_lora_rank,
                          count_field(hf.kv_lora_rank, "kv_lora_rank", 1, L::kMaxHidden));
  PAGODA_ASSIGN_OR_RETURN(int32_t nope,
                          count_field(hf.qk_nope_head_dim, "qk_nope_head_dim", 1, L::kMaxHeadDim));
  PAGODA_ASSIGN_OR_RETURN(c.rope_dims,
                          count_field(hf.qk_rope_head_dim, "qk_rope_head_dim", 1, L::kMaxHeadDim));
  PAGODA_ASSIGN_OR_RETURN(c.v_head_dim,
                          count_field(hf.v_head_dim, "v_head_dim", 1, L::kMaxHeadDim));
  c.head_dim = nope + c.rope_dims;
  const bool v3 = is_deepseek_v3(hf);
  // DeepseekV3Config's defaults: sigmoid scoring, noaux_tc (grouped top-k over biased scores).
  const std::string scoring = hf.scoring_func.value_or(v3 ? "sigmoid" : "softmax");
  if (scoring != "softmax" && !(v3 && scoring == "sigmoid")) {
    return unimplemented("config.json: scoring_func \"{}\" is not supported ({} is)", scoring,
                         v3 ? "sigmoid or softmax" : "softmax");
  }
  if (hf.moe_layer_freq.value_or(1) != 1) {
    return unimplemented("config.json: moe_layer_freq {} is not supported (1 is)",
                         *hf.moe_layer_freq);
  }
  const std::string method = hf.topk_method.value_or(v3 ? "noaux_tc" : "greedy");
  if (v3 && method == "noaux_tc") {
    if (scoring != "sigmoid") {
      return unimplemented("config.json: topk_method noaux_tc with scoring_func \"{}\"", scoring);
    }
  } else if (method == "group_limited_greedy") {
    // Grouped routing limits nothing when every group may be chosen.
    if (hf.topk_group.value_or(1) < hf.n_group.value_or(1)) {
      return unimplemented(
          "config.json: topk_method group_limited_greedy with topk_group {} < n_group {} is not "
          "supported",
          hf.topk_group.value_or(1), hf.n_group.value_or(1));
    }
  } else if (method != "greedy") {
    return unimplemented("config.json: topk_method \"{}\" is not supported (greedy{} is)", method,
                         v3 ? ", noaux_tc" : "");
  }
  if (!hf.n_routed_experts) return Status();  // dense
  PAGODA_ASSIGN_OR_RETURN(c.num_experts,
                          count_field(hf.n_routed_experts, "n_routed_experts", 1, L::kMaxExperts));
  PAGODA_ASSIGN_OR_RETURN(c.num_experts_used, count_field(hf.num_experts_per_tok,
                                                          "num_experts_per_tok", 1, c.num_experts));
  PAGODA_ASSIGN_OR_RETURN(c.expert_ffn_dim, count_field(hf.moe_intermediate_size,
                                                        "moe_intermediate_size", 1, L::kMaxFfn));
  PAGODA_ASSIGN_OR_RETURN(
      c.expert_shared_count,
      count_field(hf.n_shared_experts, "n_shared_experts", 0, L::kMaxExperts, 0));
  PAGODA_ASSIGN_OR_RETURN(
      c.leading_dense_layers,
      count_field(hf.first_k_dense_replace, "first_k_dense_replace", 0, c.num_layers, 0));
  if (v3) {
    // DeepSeek-V3: sigmoid probabilities (plus e_score_correction_bias for choosing), grouped
    // top-k when topk_method is noaux_tc, weights renormalised per norm_topk_prob and always
    // multiplied by routed_scaling_factor.
    c.expert_gating = scoring == "sigmoid" ? 2 : 1;
    c.expert_weights_norm = hf.norm_topk_prob.value_or(true);
    PAGODA_ASSIGN_OR_RETURN(c.moe_weights_scale,
                            scale_field(hf.routed_scaling_factor, "routed_scaling_factor", 2.5));
    if (method == "noaux_tc") {
      PAGODA_ASSIGN_OR_RETURN(c.expert_groups,
                              count_field(hf.n_group, "n_group", 1, c.num_experts, 8));
      PAGODA_ASSIGN_OR_RETURN(c.expert_groups_used,
                              count_field(hf.topk_group, "topk_group", 1, c.expert_groups, 4));
    }
    return Status();
  }
  c.expert_gating = 1;
  c.expert_weights_norm = hf.norm_topk_prob.value_or(false);
  // DeepSeek-V2 scales the routing weights only when it does not renormalise them.
  if (*c.expert_weights_norm) {
    c.moe_weights_scale = 1.0f;
  } else {
    PAGODA_ASSIGN_OR_RETURN(c.moe_weights_scale,
                            scale_field(hf.routed_scaling_factor, "routed_scaling_factor", 1.0));
  }
  return Status();
}

}  // namespace

Status check_hf_activation(const format::HfConfig& hf, std::string_view arch) {
  // Gemma's configs name it hidden_activation (hidden_act is the older, ignored key).
  const std::optional<std::string>& act =
      is_gemma(arch) && hf.hidden_activation ? hf.hidden_activation : hf.hidden_act;
  const std::string_view want = is_gemma(arch) ? "gelu_pytorch_tanh" : "silu";
  if (act && *act != want) {
    return unimplemented("config.json: {} \"{}\" is not supported ({} is)",
                         &act == &hf.hidden_activation ? "hidden_activation" : "hidden_act", *act,
                         want);
  }
  return Status();
}

Status hf_family_config(const format::HfConfig& hf, ModelConfig& c) {
  if (is_gemma(c.arch)) return gemma_config(hf, c);
  if (is_qwen_moe(c.arch)) return qwen_moe_config(hf, c);
  if (c.arch == "deepseek2") return deepseek_config(hf, c);
  return Status();
}

Status hf_family_finish(const format::HfConfig& hf, ModelConfig& c) {
  // Hugging Face q/k rows are in rotate-half order for every architecture here but DeepSeek's,
  // whose rope rotates adjacent pairs (its modeling code views q_pe/k_pe as complex pairs).
  c.rope_style =
      c.arch == "deepseek2" ? kernels::RopeStyle::kInterleaved : kernels::RopeStyle::kNeox;
  if (is_gemma(c.arch)) {
    const double scalar = hf.query_pre_attn_scalar.value_or(256.0);
    if (!(scalar > 0) || scalar > L::kMaxScale) {
      return invalid_argument("config.json: query_pre_attn_scalar {} is out of range (0, {}]",
                              scalar, L::kMaxScale);
    }
    c.attn_scale = static_cast<float>(1.0 / std::sqrt(scalar));
  }
  if (is_qwen_moe(c.arch)) {
    // Qwen2MoeConfig's and Qwen3MoeConfig's default is false (a GGUF file fixes the choice per
    // architecture: `convert` refuses what its architecture cannot run).
    c.moe_norm_weights = hf.norm_topk_prob.value_or(false);
  }
  return Status();
}

std::optional<std::string> family_layer_tensor_name(std::string_view arch, std::string_view rest,
                                                    int32_t* expert) {
  struct Rename {
    std::string_view hf, gguf;
  };
  static constexpr Rename kGemma[] = {
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
  };
  static constexpr Rename kQkNorm[] = {
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
  };
  static constexpr Rename kQwenMoe[] = {
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
      {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
  };
  static constexpr Rename kDeepseek[] = {
      {"self_attn.q_a_proj.weight", "attn_q_a.weight"},
      {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight"},
      {"self_attn.q_b_proj.weight", "attn_q_b.weight"},
      {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight"},
      {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight"},
      {"self_attn.kv_b_proj.weight", "attn_kv_b.weight"},
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias"},  // DeepSeek-V3
      {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight"},
  };
  auto find = [rest](std::span<const Rename> table) -> std::optional<std::string> {
    for (const Rename& r : table) {
      if (rest == r.hf) return std::string(r.gguf);
    }
    return std::nullopt;
  };
  std::optional<std::string> out;
  if (is_gemma(arch)) out = find(kGemma);
  if (!out && (arch == "gemma3" || arch == "qwen3" || arch == "qwen3moe")) out = find(kQkNorm);
  if (!out && is_qwen_moe(arch)) out = find(kQwenMoe);
  if (!out && arch == "deepseek2") out = find(kDeepseek);
  if (out) return out;
  // Routed experts: mlp.experts.E.{gate,up,down}_proj.weight.
  constexpr std::string_view kExperts = "mlp.experts.";
  if ((is_qwen_moe(arch) || arch == "deepseek2") && rest.starts_with(kExperts)) {
    std::string_view tail = rest.substr(kExperts.size());
    const auto e = take_hf_index(tail);
    if (!e) return std::nullopt;
    for (std::string_view part : {"gate", "up", "down"}) {
      if (tail.starts_with(part) && tail.substr(part.size()) == "_proj.weight") {
        *expert = *e;
        return "ffn_" + std::string(part) + "." + std::to_string(*e) + ".weight";
      }
    }
  }
  return std::nullopt;
}

bool hf_norm_adds_one(std::string_view arch, std::string_view gguf_name) {
  if (!is_gemma(arch)) return false;
  for (std::string_view norm :
       {"attn_norm.weight", "post_attention_norm.weight", "ffn_norm.weight", "post_ffw_norm.weight",
        "attn_q_norm.weight", "attn_k_norm.weight"}) {
    if (gguf_name.starts_with("blk.") && gguf_name.ends_with(norm) &&
        gguf_name[gguf_name.size() - norm.size() - 1] == '.') {
      return true;
    }
  }
  return gguf_name == "output_norm.weight";
}

std::optional<int32_t> take_hf_index(std::string_view& s) {
  size_t n = 0;
  while (n < s.size() && n < 7 && s[n] >= '0' && s[n] <= '9')
    ++n;
  if (n == 0 || n >= s.size() || s[n] != '.' || (n > 1 && s[0] == '0')) return std::nullopt;
  int32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v = v * 10 + (s[i] - '0');
  s.remove_prefix(n + 1);
  return v;
}

}  // namespace pagoda::loader
