// deepseek2: DeepSeek-V2 / V2-Lite in GGUF's deepseek2 layout (as llama.cpp ran it before its
// absorbed-MLA rewrite: attn_kv_b whole). Multi-head latent attention (blocks/
// mla_attention_block.h) with rope on adjacent pairs of the rope part; the first
// leading_dense_block_count layers have a dense SwiGLU FFN, the others a softmax router over the
// experts, top k, weights renormalised or not (expert_weights_norm) and multiplied by
// expert_weights_scale, plus expert_shared_count shared experts stored fused and added ungated.
// DeepSeek-V3 in the same layout (expert_gating_func 2): sigmoid router, experts chosen by
// probability + exp_probs_b within the expert_group_used_count best of expert_group_count groups,
// weights the probabilities (renormalised per expert_weights_norm) x expert_weights_scale.
// Refused by name: YaRN rope scaling (its attention-scale correction is not implemented).
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
    return unimplemented("deepseek2 with YaRN rope scaling is not supported yet");
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
