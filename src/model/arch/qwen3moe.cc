// qwen3moe: Qwen3-MoE in GGUF's qwen3moe layout. Qwen3 attention (no biases, per-head RMSNorm of
// q and k before NEOX rope, head_dim from attention.key_length); every FFN is a softmax router
// over expert_count experts of expert_feed_forward_length, the top k weighted by their
// probabilities renormalised over the k (llama.cpp's qwen3moe always renormalises), no shared
// expert. A Hugging Face directory may also have dense layers (mlp_only_layers,
// decoder_sparse_step) and norm_topk_prob false (loader/hf); a GGUF file states neither.
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_qwen3moe(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kNeox;
  c.has_qkv_bias = false;
  c.qk_norm = true;
  if (c.num_experts == 0) return invalid_argument("qwen3moe needs expert_count");
  if (c.shared_expert_ffn_dim > 0) {
    return unimplemented("qwen3moe with a shared expert (expert_shared_feed_forward_length)");
  }
  c.shared_expert_gated = false;
  c.moe_norm_weights = true;
  return Status();
}

}  // namespace

const ArchDef kQwen3MoeArch = {"qwen3moe", &configure_qwen3moe, &build_decoder};

}  // namespace pagoda::model
