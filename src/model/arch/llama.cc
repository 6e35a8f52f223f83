// llama: Llama 2/3, Mistral, TinyLlama, and Mixtral (experts) in GGUF's llama layout.
// GGUF llama files store q/k permuted for interleaved (GPT-J style) RoPE; GQA/MQA via
// head_count_kv; Llama-3 rope scaling arrives as rope_freqs.weight; experts when expert_count>0.
// attention.sliding_window (Mistral 7B v0.1's 4096, as `pagoda convert` writes it; llama.cpp's
// converter leaves it out and llama.cpp runs full attention) applies to every layer.
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_llama(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kInterleaved;
  c.has_qkv_bias = false;
  c.sliding_layers = c.sliding_window > 0 ? SlidingLayers::kAll : SlidingLayers::kNone;
  return Status();
}

}  // namespace

const ArchDef kLlamaArch = {"llama", &configure_llama, &build_decoder};

}  // namespace pagoda::model
