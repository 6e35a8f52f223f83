// gemma3: Gemma 3 (text) in GGUF's gemma3 layout. As gemma2 (embedding x sqrt(hidden), the four
// norms per layer, GeGLU, NEOX rope) plus a per-head RMSNorm of q and k (attn_q_norm /
// attn_k_norm, stored as 1 + w) before rope, and no attention soft-cap. Five of every six layers
// are local: they attend through attention.sliding_window with their own rope base (10000, no
// scaling: llama.cpp's fixed freq_base_swa); every sixth layer is global with rope.freq_base and
// the file's rope scaling. Queries are scaled by 1 / sqrt(key_length), or by
// 1 / sqrt(hidden / heads) for 62-layer models (Gemma-3 27B), as llama.cpp does.
#include <cmath>

#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_gemma3(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kNeox;
  c.has_qkv_bias = false;
  c.qk_norm = true;
  c.ffn_activation = FfnActivation::kGeluTanh;
  c.post_norms = true;
  c.embedding_scale = std::sqrt(static_cast<float>(c.hidden_dim));
  if (c.sliding_window == 0) c.sliding_window = 4096;
  c.sliding_layers = SlidingLayers::kPattern;
  if (c.sliding_pattern == 0) c.sliding_pattern = 6;
  if (c.rope_local_theta == 0) c.rope_local_theta = 10000.0f;
  if (c.num_layers == 62 && c.num_heads > 0 && c.hidden_dim % c.num_heads == 0) {
    c.attn_scale = 1.0f / std::sqrt(static_cast<float>(c.hidden_dim / c.num_heads));
  }
  if (c.num_experts > 0) return unimplemented("gemma3 with experts is not supported");
  return Status();
}

}  // namespace

const ArchDef kGemma3Arch = {"gemma3", &configure_gemma3, &build_decoder};

}  // namespace pagoda::model
