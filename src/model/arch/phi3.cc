// phi3: Phi-3 / Phi-3.5 / Phi-4 in GGUF's phi3 layout. Like llama with one fused attn_qkv matrix
// (q rows, then k, then v) and gate/up fused in ffn_up (gate rows first), NEOX rope over the head,
// and, when attention.sliding_window is set (Phi-3; Phi-4 has none), that window on every layer
// as llama.cpp applies it. LongRoPE's per-context factor tables (rope_factors_long/short) are
// refused by name: they are not implemented yet.
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

Result<std::unique_ptr<Model>> build_phi3(const ModelConfig& config,
                                          std::unique_ptr<TensorSource> source,
                                          backend::Backend& backend) {
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (source->find(name) != nullptr) {
      return unimplemented("phi3 LongRoPE scaling ({}) is not supported yet", name);
    }
  }
  return build_decoder(config, std::move(source), backend);
}

}  // namespace

const ArchDef kPhi3Arch = {"phi3", &configure_phi3, &build_phi3};

}  // namespace pagoda::model
