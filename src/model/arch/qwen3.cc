// qwen3: Qwen3 (dense). Like qwen2 without the q/k/v biases, plus a per-head RMSNorm of q and k
// (attn_q_norm / attn_k_norm, head_dim wide) before RoPE; NEOX rope; head_dim may differ from
// hidden / heads (attention.key_length).
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_qwen3(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kNeox;
  c.has_qkv_bias = false;
  c.qk_norm = true;
  if (c.num_experts > 0) return unimplemented("qwen3 with experts (qwen3moe) is not supported");
  return Status();
}

}  // namespace

const ArchDef kQwen3Arch = {"qwen3", &configure_qwen3, &build_decoder};

}  // namespace pagoda::model
