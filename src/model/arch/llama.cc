// llama: Llama 2/3, Mistral, TinyLlama, and Mixtral (experts) in GGUF's llama layout.
// GGUF llama files store q/k permuted for interleaved (GPT-J style) RoPE; GQA/MQA via
// head_count_kv; Llama-3 rope scaling arrives as rope_freqs.weight; experts when expert_count>0.
#include "model/arch/arch.h"

namespace pagoda::model {
namespace {

Status configure_llama(ModelConfig& c) {
  c.rope_style = kernels::RopeStyle::kInterleaved;
  c.has_qkv_bias = false;
  return Status();
}

}  // namespace

const ArchDef kLlamaArch = {"llama", &configure_llama, &build_decoder};

}  // namespace pagoda::model
