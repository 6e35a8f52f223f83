// ModelShape: the hyper-parameters of a real model family by name ("tinyllama-1.1b",
// "llama3.2-1b", "qwen2.5-0.5b", "mixtral-tiny", "qwen2moe-a2.7b", ...), so `pagoda synth` can
// write a model with random weights at exactly those shapes (for benchmarks and tests without
// downloading weights). A shape is plain data; synth_model.h turns it into tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::convert {

// Llama-3 style RoPE scaling, stored in GGUF as the rope_freqs.weight tensor (one factor per
// rotated pair) the way llama.cpp's converter computes it from these parameters.
struct Llama3RopeScaling {
  float factor = 8.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  int32_t original_context = 8192;
};

struct ModelShape {
  std::string_view name;         // what --shape accepts
  std::string_view arch;         // GGUF general.architecture: "llama", "qwen2" or "qwen2moe"
  std::string_view description;  // one line for --help
  int32_t num_layers = 0;
  int32_t hidden_dim = 0;
  int32_t num_heads = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;    // hidden_dim / num_heads for every shape here
  int32_t ffn_dim = 0;     // per expert for MoE
  int32_t vocab_size = 0;  // the real model's; synth follows the vocab file it is given
  int32_t context_length = 0;
  float rope_theta = 10000.0f;
  float rms_norm_eps = 1e-5f;
  bool qkv_bias = false;
  bool tied_embeddings = false;
  int32_t num_experts = 0;  // 0 = dense
  int32_t num_experts_used = 0;
  int32_t shared_expert_ffn_dim = 0;  // qwen2moe: the gated shared expert's width
  std::optional<Llama3RopeScaling> llama3_rope;
};

// Every named shape, in a stable order.
std::span<const ModelShape> all_model_shapes();
// The shape called `name` (exact match), or nullptr.
const ModelShape* find_model_shape(std::string_view name);
// "tinyllama-1.1b, llama3.2-1b, ..." for messages.
std::string model_shape_names();

// rope_freqs.weight for Llama-3 scaling: [head_dim / 2] f32, computed in float32 exactly as
// llama.cpp's convert_hf_to_gguf.py does (1 above the high-frequency wavelength, `factor` below
// the low-frequency one, a smooth blend in between).
std::vector<float> llama3_rope_factors(const Llama3RopeScaling& scaling, float rope_theta,
                                       int32_t head_dim);

}  // namespace pagoda::convert
