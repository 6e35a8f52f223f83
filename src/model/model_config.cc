// ModelConfig's validation: the one owner of the hyper-parameters' bounds (see model_config.h).
#include "model/model_config.h"

#include <cmath>
#include <string_view>
#include <utility>

namespace pagoda::model {

Status validate_config(const ModelConfig& c) {
  using L = ConfigLimits;
  auto positive = [](std::string_view what, int64_t v, int64_t max) -> Status {
    if (v <= 0 || v > max) return invalid_argument("{} = {} is out of range [1, {}]", what, v, max);
    return Status();
  };
  PAGODA_RETURN_IF_ERROR(positive("block_count", c.num_layers, L::kMaxLayers));
  PAGODA_RETURN_IF_ERROR(positive("embedding_length", c.hidden_dim, L::kMaxHidden));
  PAGODA_RETURN_IF_ERROR(positive("attention.head_count", c.num_heads, L::kMaxHeads));
  PAGODA_RETURN_IF_ERROR(positive("attention.head_count_kv", c.num_kv_heads, L::kMaxHeads));
  PAGODA_RETURN_IF_ERROR(positive("head_dim", c.head_dim, L::kMaxHeadDim));
  PAGODA_RETURN_IF_ERROR(positive("feed_forward_length", c.ffn_dim, L::kMaxFfn));
  PAGODA_RETURN_IF_ERROR(positive("vocab_size", c.vocab_size, L::kMaxVocab));
  PAGODA_RETURN_IF_ERROR(positive("context_length", c.context_length, L::kMaxContext));
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
  if (c.rope_theta > L::kMaxRopeTheta) {
    return invalid_argument("rope.freq_base {} is out of range (0, {}]", c.rope_theta,
                            L::kMaxRopeTheta);
  }
  if (!(c.rope_attn_factor > 0) || c.rope_attn_factor > L::kMaxRopeScaling) {
    return invalid_argument("rope.scaling.attn_factor {} is out of range (0, {}]",
                            c.rope_attn_factor, L::kMaxRopeScaling);
  }
  if (c.rope_orig_ctx < 0 || c.rope_orig_ctx > L::kMaxContext) {
    return invalid_argument("rope.scaling.original_context_length {} is out of range [0, {}]",
                            c.rope_orig_ctx, L::kMaxContext);
  }
  // (attn_factor and the original context's upper bound are checked above for every model.)
  if (c.rope_ext_factor != 0.0f &&
      (!(c.rope_yarn_beta_fast > 0) || !(c.rope_yarn_beta_slow > 0) || c.rope_orig_ctx <= 0)) {
    return invalid_argument(
        "rope scaling (yarn): beta_fast {}, beta_slow {}, original context {} must be positive",
        c.rope_yarn_beta_fast, c.rope_yarn_beta_slow, c.rope_orig_ctx);
  }
  if (c.rope_ext_factor != 0.0f &&
      (c.rope_yarn_beta_fast > L::kMaxRopeScaling || c.rope_yarn_beta_slow > L::kMaxRopeScaling)) {
    return invalid_argument(
        "rope scaling (yarn): beta_fast {}, beta_slow {} (at most {}) are out "
        "of range",
        c.rope_yarn_beta_fast, c.rope_yarn_beta_slow, L::kMaxRopeScaling);
  }
  if (!(c.rope_yarn_log_mul >= 0) || c.rope_yarn_log_mul > L::kMaxRopeScaling) {
    return invalid_argument("rope.scaling.yarn_log_multiplier {} is out of range [0, {}]",
                            c.rope_yarn_log_mul, L::kMaxRopeScaling);
  }
  if (!(c.rms_norm_eps >= 0) || c.rms_norm_eps > L::kMaxRmsNormEps) {
    return invalid_argument("attention.layer_norm_rms_epsilon {} is out of range", c.rms_norm_eps);
  }
  if (c.num_experts < 0 || c.num_experts > L::kMaxExperts) {
    return invalid_argument("expert_count {} is out of range", c.num_experts);
  }
  if (c.num_experts > 0 && (c.num_experts_used <= 0 || c.num_experts_used > c.num_experts)) {
    return invalid_argument("expert_used_count {} must be in [1, expert_count {}]",
                            c.num_experts_used, c.num_experts);
  }
  PAGODA_RETURN_IF_ERROR(positive("expert_feed_forward_length", c.expert_ffn(), L::kMaxFfn));
  if (c.shared_expert_ffn_dim < 0 || c.shared_expert_ffn_dim > L::kMaxFfn) {
    return invalid_argument("expert_shared_feed_forward_length {} is out of range [0, {}]",
                            c.shared_expert_ffn_dim, L::kMaxFfn);
  }
  if ((c.num_experts == 0) && (c.shared_expert_ffn_dim > 0 || c.expert_ffn_dim > 0)) {
    return invalid_argument("expert feed-forward lengths are set but expert_count is not");
  }
  if (!(c.moe_weights_scale > 0) || c.moe_weights_scale > L::kMaxScale) {
    return invalid_argument("expert_weights_scale {} is out of range (0, {}]", c.moe_weights_scale,
                            L::kMaxScale);
  }
  if (!(c.embedding_scale > 0) || c.embedding_scale > L::kMaxScale) {
    return invalid_argument("embedding scale {} is out of range (0, {}]", c.embedding_scale,
                            L::kMaxScale);
  }
  for (const auto& [what, v] :
       {std::pair<std::string_view, float>{"attn_logit_softcapping", c.attn_softcap},
        {"final_logit_softcapping", c.final_softcap},
        {"attention scale", c.attn_scale}}) {
    if (!(v >= 0) || v > L::kMaxScale) {
      return invalid_argument("{} {} is out of range [0, {}]", what, v, L::kMaxScale);
    }
  }
  if (c.value_dim() != c.head_dim && !c.mla()) {
    return unimplemented("attention.value_length {} != key_length {} (only MLA models have that)",
                         c.value_dim(), c.head_dim);
  }
  if (c.mla()) {
    if (c.value_dim() > c.head_dim || c.rope_dims >= c.head_dim) {
      return invalid_argument(
          "MLA needs value_length {} <= key_length {} and rope.dimension_count {} < key_length",
          c.value_dim(), c.head_dim, c.rope_dims);
    }
    if (c.kv_lora_rank > L::kMaxHidden || c.q_lora_rank < 0 || c.q_lora_rank > L::kMaxHidden) {
      return invalid_argument("attention.q_lora_rank {} / kv_lora_rank {} are out of range",
                              c.q_lora_rank, c.kv_lora_rank);
    }
  } else if (c.q_lora_rank != 0) {
    return invalid_argument("attention.q_lora_rank is set but kv_lora_rank is not");
  }
  if (c.leading_dense_layers < 0 || c.leading_dense_layers > c.num_layers) {
    return invalid_argument("leading_dense_block_count {} is out of range [0, {}]",
                            c.leading_dense_layers, c.num_layers);
  }
  for (int32_t d : c.dense_layers) {
    if (d < 0 || d >= c.num_layers) {
      return invalid_argument("dense layer {} is out of range [0, {})", d, c.num_layers);
    }
  }
  if (c.expert_gating < 0 || c.expert_gating > 2) {
    return invalid_argument("expert_gating_func {} is not 1 (softmax) or 2 (sigmoid)",
                            c.expert_gating);
  }
  if (c.expert_groups < 1 || c.expert_groups_used < 1 || c.expert_groups_used > c.expert_groups ||
      (c.num_experts > 0 && c.num_experts % c.expert_groups != 0)) {
    return invalid_argument(
        "expert_group_count {} / expert_group_used_count {} must be positive, the second at most "
        "the first, and divide expert_count {}",
        c.expert_groups, c.expert_groups_used, c.num_experts);
  }
  if (c.expert_groups > 1 &&
      (c.num_experts / c.expert_groups < 2 ||
       c.num_experts_used > c.expert_groups_used * (c.num_experts / c.expert_groups))) {
    return invalid_argument(
        "expert_group_count {}: each group needs 2 experts or more, and the {} used groups must "
        "hold expert_used_count {}",
        c.expert_groups, c.expert_groups_used, c.num_experts_used);
  }
  if (!(c.rope_local_theta >= 0) || c.rope_local_theta > L::kMaxRopeTheta) {
    return invalid_argument("rope.freq_base_swa {} is out of range [0, {}]", c.rope_local_theta,
                            L::kMaxRopeTheta);
  }
  if (c.sliding_layers == SlidingLayers::kPattern &&
      (c.sliding_pattern < 1 || c.sliding_pattern > c.num_layers + 1)) {
    return invalid_argument("sliding_window_pattern {} is out of range [1, {}]", c.sliding_pattern,
                            c.num_layers + 1);
  }
  if (c.sliding_window < 0 || c.sliding_window > L::kMaxContext) {
    return invalid_argument("attention.sliding_window {} is out of range [0, {}]", c.sliding_window,
                            L::kMaxContext);
  }
  if (c.sliding_layers != SlidingLayers::kNone && c.sliding_window == 0) {
    return invalid_argument("this architecture needs attention.sliding_window (a positive size)");
  }
  return Status();
}

void extend_yarn_context(ModelConfig& c, double factor) {
  const double scaled = std::floor(static_cast<double>(c.rope_orig_ctx) * factor);
  if (scaled > c.context_length && scaled <= ConfigLimits::kMaxContext) {
    c.context_length = static_cast<int32_t>(scaled);
  }
}

bool use_long_rope_factors(const ModelConfig& c, int32_t served_context) {
  return c.rope_orig_ctx > 0 && served_context > c.rope_orig_ctx;
}

double mha_kv_bytes_per_token(const ModelConfig& c, tensor::DType dtype) {
  double per_value = 0;
  switch (dtype) {
    case tensor::DType::kF32:
      per_value = 4;
      break;
    case tensor::DType::kF16:
    case tensor::DType::kBF16:
      per_value = 2;
      break;
    case tensor::DType::kQ8_0:
      per_value = 34.0 / 32.0;
      break;
    default:
      return 0;
  }
  return static_cast<double>(c.num_layers) * c.num_heads * (c.head_dim + c.value_dim()) * per_value;
}

backend::KvLayout kv_layout(const ModelConfig& c, bool kv_groups) {
  if (c.mla()) return backend::KvLayout{c.num_layers, 1, c.rope_dims + c.kv_lora_rank, true};
  backend::KvLayout layout{c.num_layers, c.num_kv_heads, c.head_dim};
  if (kv_groups && c.hybrid_sliding_window() > 0) {
    int32_t count[2] = {0, 0};
    for (int32_t l = 0; l < c.num_layers; ++l) {
      int32_t& n = count[c.kv_group(l)];
      layout.layer_array.push_back(n++);
    }
  }
  return layout;
}

}  // namespace pagoda::model
