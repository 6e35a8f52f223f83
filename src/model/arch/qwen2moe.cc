// qwen2moe: Qwen1.5-MoE / Qwen2-MoE. Qwen2 attention (q/k/v biases, NEOX rope); each FFN is a
// softmax router over the experts whose top k run with their probabilities as weights (not
// renormalised), plus a shared expert on every token whose output is multiplied by
// sigmoid(ffn_gate_inp_shexp . x). Experts are expert_feed_forward_length wide, the shared one
// expert_shared_feed_forward_length.
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_qwen2moe(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kNeox;
  c.has_qkv_bias = true;
  if (c.num_experts == 0) return invalid_argument("qwen2moe needs expert_count");
  if (c.shared_expert_ffn_dim == 0) {
    return invalid_argument("qwen2moe needs expert_shared_feed_forward_length");
  }
  c.shared_expert_gated = true;
  c.moe_norm_weights = false;
  return Status();
}

}  // namespace

const ArchDef kQwen2MoeArch = {"qwen2moe", &configure_qwen2moe, &build_decoder};

}  // namespace pagoda::model
