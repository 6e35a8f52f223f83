// qwen2: Qwen2 / Qwen2.5. Like llama, plus q/k/v biases and NEOX (rotate-half) RoPE; small
// models tie the output projection to the embedding. attention.sliding_window, when present
// (use_sliding_window on every layer, as `pagoda convert` writes it), applies to every layer.
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_qwen2(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kNeox;
  c.has_qkv_bias = true;
  c.sliding_layers = c.sliding_window > 0 ? SlidingLayers::kAll : SlidingLayers::kNone;
  if (c.num_experts > 0) return unimplemented("qwen2 with experts (qwen2moe) is not supported");
  return Status();
}

}  // namespace

const ArchDef kQwen2Arch = {"qwen2", &configure_qwen2, &build_decoder};

}  // namespace pagoda::model
