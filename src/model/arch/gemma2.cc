// gemma2: Gemma 2 in GGUF's gemma2 layout. The embedding is multiplied by sqrt(hidden) (and tied
// to the output); each layer is RMSNorm → attention → post_attention_norm → residual, RMSNorm →
// GeGLU FFN (tanh-form gelu) → post_ffw_norm → residual (norm weights as stored: the GGUF
// converter already added Gemma's 1); attention scores are soft-capped (attn_logit_softcapping)
// and the even layers attend through attention.sliding_window; the logits are soft-capped
// (final_logit_softcapping). NEOX rope. Missing keys take llama.cpp's defaults (caps 50 and 30,
// window 4096), and 46-layer models (Gemma-2 27B) scale queries by 1 / sqrt(hidden / heads).
#include <cmath>

#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_gemma2(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kNeox;
  c.has_qkv_bias = false;
  c.ffn_activation = FfnActivation::kGeluTanh;
  c.post_norms = true;
  c.embedding_scale = std::sqrt(static_cast<float>(c.hidden_dim));
  if (c.attn_softcap == 0) c.attn_softcap = 50.0f;
  if (c.final_softcap == 0) c.final_softcap = 30.0f;
  if (c.sliding_window == 0) c.sliding_window = 4096;
  c.sliding_layers = SlidingLayers::kEven;
  if (c.num_layers == 46 && c.num_heads > 0 && c.hidden_dim % c.num_heads == 0) {
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.hidden_dim / c.num_heads));
  }
  if (c.num_experts > 0) return unimplemented("gemma2 with experts is not supported");
  return Status();
}

}  // namespace

const ArchDef kGemma2Arch = {"gemma2", &configure_gemma2, &build_decoder};

}  // namespace pagoda::model
