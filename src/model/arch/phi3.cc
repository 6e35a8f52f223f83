// phi3: Phi-3 / Phi-3.5 / Phi-4 in GGUF's phi3 layout. Like llama with one fused attn_qkv matrix
// (q rows, then k, then v) and gate/up fused in ffn_up (gate rows first), NEOX rope over the head,
// and, when attention.sliding_window is set (Phi-3; Phi-4 has none), that window on every layer
// as llama.cpp applies it. LongRoPE (Phi-3-128k, Phi-3.5, Phi-4-mini): rope_factors_long/short
// tables, rope.scaling.attn_factor and original_context_length, bound and chosen by the decoder
// (model/decoder.cc, use_long_rope_factors).
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_phi3(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kNeox;
  c.has_qkv_bias = false;
  c.fused_qkv = true;
  c.fused_gate_up = true;
  c.sliding_layers = c.sliding_window > 0 ? SlidingLayers::kAll : SlidingLayers::kNone;
  if (c.num_experts > 0) return unimplemented("phi3 with experts (PhiMoE) is not supported");
  return Status();
}

}  // namespace

const ArchDef kPhi3Arch = {"phi3", &configure_phi3, &build_decoder};

}  // namespace pagoda::model
