// deepseek2: DeepSeek-V2 / V2-Lite in GGUF's deepseek2 layout (as llama.cpp ran it before its
// absorbed-MLA rewrite: attn_kv_b whole). Multi-head latent attention (blocks/
// mla_attention_block.h) with rope on adjacent pairs of the rope part; the first
// leading_dense_block_count layers have a dense SwiGLU FFN, the others a softmax router over the
// experts, top k, weights renormalised or not (expert_weights_norm) and multiplied by
// expert_weights_scale, plus expert_shared_count shared experts stored fused and added ungated.
// DeepSeek-V3 in the same layout (expert_gating_func 2): sigmoid router, experts chosen by
// probability + exp_probs_b within the expert_group_used_count best of expert_group_count groups,
// weights the probabilities (renormalised per expert_weights_norm) x expert_weights_scale.
// YaRN as DeepSeek's reference runs it (and llama.cpp's deepseek2 graph): cos/sin unscaled, the
// attention scores scaled by mscale^2, mscale = 1 + yarn_log_multiplier ln(factor) (HF:
// yarn_get_mscale(factor, mscale_all_dim)).
#include <cmath>

#include "base/checked_math.h"
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_deepseek2(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kInterleaved;
  c.has_qkv_bias = false;
  if (c.kv_lora_rank == 0) return invalid_argument("deepseek2 needs attention.kv_lora_rank");
  // num_kv_heads: the heads of the equivalent multi-head model (each head has its own key and
  // value); the cache holds the latent instead (model::kv_layout, blocks/mla_attention_block.h).
  c.num_kv_heads = c.num_heads;
  if (c.rope_ext_factor != 0.0f) {
    // Recomputed from the raw fields on every configure (a converted file configures again).
    const double factor = 1.0 / static_cast<double>(c.rope_freq_scale);
    const double mscale = static_cast<double>(c.rope_attn_factor) *
                          (1.0 + static_cast<double>(c.rope_yarn_log_mul) * std::log(factor));
    if (!(mscale > 0)) {
      return invalid_argument("deepseek2 YaRN: attention mscale {} is not positive", mscale);
    }
    c.rope_yarn_scale_scores = true;
    c.attn_scale = static_cast<float>(mscale * mscale / std::sqrt(static_cast<double>(c.head_dim)));
  }
  if (c.num_experts > 0 && c.expert_shared_count > 0) {
    const auto width = checked_mul<int64_t>(c.expert_shared_count, c.expert_ffn());
    if (!width || *width > ConfigLimits::kMaxFfn) {
      return invalid_argument("expert_shared_count {} x expert_feed_forward_length {} is too large",
                              c.expert_shared_count, c.expert_ffn());
    }
    c.shared_expert_ffn_dim = static_cast<int32_t>(*width);
  }
  c.shared_expert_gated = false;
  c.moe_norm_weights = c.expert_weights_norm.value_or(false);  // llama.cpp's default
  return Status();
}

}  // namespace

const ArchDef kDeepseek2Arch = {"deepseek2", &configure_deepseek2, &build_decoder};

}  // namespace pagoda::model
