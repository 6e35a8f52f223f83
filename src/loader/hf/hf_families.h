// The Hugging Face families beyond the llama layout: what their config.json fields mean for a
// ModelConfig and what their tensors are called in GGUF (hf_checkpoint.h has the llama names).
//
//   Gemma2ForCausalLM, Gemma3ForCausalLM (text)  → gemma2 / gemma3
//     post_attention_layernorm → post_attention_norm, pre_feedforward_layernorm → ffn_norm,
//     post_feedforward_layernorm → post_ffw_norm, self_attn.{q,k}_norm → attn_{q,k}_norm;
//     every norm weight w becomes 1 + w (Gemma's RMSNorm multiplies by 1 + w; GGUF files store
//     the sum, as llama.cpp's converter writes it).
//   Qwen2MoeForCausalLM, Qwen3MoeForCausalLM  → qwen2moe / qwen3moe
//     mlp.gate → ffn_gate_inp, mlp.experts.E.{gate,up,down}_proj → ffn_{gate,up,down}.E,
//     mlp.shared_expert.{gate,up,down}_proj → ffn_{gate,up,down}_shexp,
//     mlp.shared_expert_gate ([1, hidden]) → ffn_gate_inp_shexp.
//   Qwen3ForCausalLM → qwen3: self_attn.{q,k}_norm → attn_{q,k}_norm.
//   DeepseekV2ForCausalLM → deepseek2
//     self_attn.q_a_proj / q_a_layernorm / q_b_proj → attn_q_a / attn_q_a_norm / attn_q_b,
//     kv_a_proj_with_mqa / kv_a_layernorm / kv_b_proj → attn_kv_a_mqa / attn_kv_a_norm /
//     attn_kv_b, mlp.gate → ffn_gate_inp, mlp.experts.E.* as above,
//     mlp.shared_experts.{gate,up,down}_proj → ffn_{gate,up,down}_shexp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "format/hf_config.h"
#include "model/model_config.h"

namespace pagoda::loader {

// The activation config.json names (hidden_act, or Gemma's hidden_activation) must be the one
// `arch` runs: silu, or gelu_pytorch_tanh for Gemma.
Status check_hf_activation(const format::HfConfig& hf, std::string_view arch);

// Fills the family's fields of `c` (experts, MLA ranks, soft-caps, windows) from config.json;
// runs before the architecture's configure(). Errors name the config.json field.
Status hf_family_config(const format::HfConfig& hf, model::ModelConfig& c);

// Runs after configure(): the fields configure() sets from GGUF defaults that config.json states
// (Gemma's query_pre_attn_scalar, MoE weight normalisation, RoPE style).
Status hf_family_finish(const format::HfConfig& hf, model::ModelConfig& c);

// The GGUF name of the layer tensor `rest` (the part after "model.layers.N.") for `arch`, when
// the family names it differently from llama; nullopt otherwise. *expert receives an expert
// index found in the name (left alone otherwise).
std::optional<std::string> family_layer_tensor_name(std::string_view arch, std::string_view rest,
                                                    int32_t* expert);

// True for GGUF tensor names whose HF weights are stored as w where GGUF stores 1 + w (Gemma's
// RMSNorm weights).
bool hf_norm_adds_one(std::string_view arch, std::string_view gguf_name);

// Parses a decimal index at the start of `s` (no sign, no leading zeros, at most 7 digits)
// followed by '.', and removes both; nullopt (s unchanged) otherwise.
std::optional<int32_t> take_hf_index(std::string_view& s);

}  // namespace pagoda::loader
