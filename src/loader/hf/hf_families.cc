#include "loader/hf/hf_families.h"

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

Status gemma_config(const format::HfConfig& hf, ModelConfig& c) {
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
  if (hf.decoder_sparse_step.value_or(1) != 1) {
    return unimplemented("config.json: decoder_sparse_step {} is not supported (1 is)",
                         *hf.decoder_sparse_step);
  }
  if (!hf.mlp_only_layers.empty()) {
    return unimplemented(
        "config.json: mlp_only_layers (dense layers among MoE ones) is not "
        "supported");
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
  if (hf.scoring_func.value_or("softmax") != "softmax") {
    return unimplemented("config.json: scoring_func \"{}\" is not supported (softmax is)",
                         *hf.scoring_func);
  }
  if (hf.moe_layer_freq.value_or(1) != 1) {
    return unimplemented("config.json: moe_layer_freq {} is not supported (1 is)",
                         *hf.moe_layer_freq);
  }
  const std::string method = hf.topk_method.value_or("greedy");
  if (method == "group_limited_greedy") {
    // Grouped routing limits nothing when every group may be chosen.
    if (hf.topk_group.value_or(1) < hf.n_group.value_or(1)) {
      return unimplemented(
          "config.json: topk_method group_limited_greedy with topk_group {} < n_group {} is not "
          "supported",
          hf.topk_group.value_or(1), hf.n_group.value_or(1));
    }
  } else if (method != "greedy") {
    return unimplemented("config.json: topk_method \"{}\" is not supported (greedy is)", method);
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
    // The GGUF architectures fix the choice: qwen2moe never renormalises, qwen3moe always does.
    const bool want = c.arch == "qwen3moe";
    if (hf.norm_topk_prob.value_or(want) != want) {
      return unimplemented("config.json: norm_topk_prob {} is not supported for {} ({} is)", !want,
                           c.arch, want);
    }
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
