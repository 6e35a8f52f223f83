#include "convert/shapes/model_shape.h"

#include <array>
#include <cmath>
#include <numbers>

namespace pagoda::convert {
namespace {

ModelShape tinyllama() {
  ModelShape s;
  s.name = "tinyllama-1.1b";
  s.arch = "llama";
  s.description = "TinyLlama 1.1B: 22 layers, hidden 2048, 32/4 heads, ffn 5632, vocab 32000";
  s.num_layers = 22;
  s.hidden_dim = 2048;
  s.num_heads = 32;
  s.num_kv_heads = 4;
  s.head_dim = 64;
  s.ffn_dim = 5632;
  s.vocab_size = 32000;
  s.context_length = 2048;
  s.rope_theta = 10000.0f;
  s.rms_norm_eps = 1e-5f;
  return s;
}

ModelShape llama32_1b() {
  ModelShape s;
  s.name = "llama3.2-1b";
  s.arch = "llama";
  s.description =
      "Llama 3.2 1B: 16 layers, hidden 2048, 32/8 heads, ffn 8192, vocab 128256, tied, "
      "Llama-3 rope scaling";
  s.num_layers = 16;
  s.hidden_dim = 2048;
  s.num_heads = 32;
  s.num_kv_heads = 8;
  s.head_dim = 64;
  s.ffn_dim = 8192;
  s.vocab_size = 128256;
  s.context_length = 131072;
  s.rope_theta = 500000.0f;
  s.rms_norm_eps = 1e-5f;
  s.tied_embeddings = true;
  s.llama3_rope = Llama3RopeScaling{32.0f, 1.0f, 4.0f, 8192};
  return s;
}

ModelShape qwen25_05b() {
  ModelShape s;
  s.name = "qwen2.5-0.5b";
  s.arch = "qwen2";
  s.description =
      "Qwen2.5 0.5B: 24 layers, hidden 896, 14/2 heads, ffn 4864, qkv biases, tied, vocab 151936";
  s.num_layers = 24;
  s.hidden_dim = 896;
  s.num_heads = 14;
  s.num_kv_heads = 2;
  s.head_dim = 64;
  s.ffn_dim = 4864;
  s.vocab_size = 151936;
  s.context_length = 32768;
  s.rope_theta = 1000000.0f;
  s.rms_norm_eps = 1e-6f;
  s.qkv_bias = true;
  s.tied_embeddings = true;
  return s;
}

ModelShape mixtral_tiny() {
  ModelShape s;
  s.name = "mixtral-tiny";
  s.arch = "llama";
  s.description =
      "Mixtral layout, small: 4 layers, hidden 512, 8/2 heads, 8 experts top-2, ffn 1024";
  s.num_layers = 4;
  s.hidden_dim = 512;
  s.num_heads = 8;
  s.num_kv_heads = 2;
  s.head_dim = 64;
  s.ffn_dim = 1024;
  s.vocab_size = 32000;
  s.context_length = 4096;
  s.rope_theta = 1000000.0f;
  s.rms_norm_eps = 1e-5f;
  s.num_experts = 8;
  s.num_experts_used = 2;
  return s;
}

// Qwen1.5-MoE-A2.7B (config.json of Qwen/Qwen1.5-MoE-A2.7B): fine-grained experts (60, top 4,
// 1408 wide, probabilities not renormalised) and a gated shared expert 5632 wide.
ModelShape qwen2moe_a27b() {
  ModelShape s;
  s.name = "qwen2moe-a2.7b";
  s.arch = "qwen2moe";
  s.description =
      "Qwen1.5-MoE-A2.7B: 24 layers, hidden 2048, 16/16 heads, 60 experts top-4 of ffn 1408, "
      "shared expert 5632, qkv biases, vocab 151936";
  s.num_layers = 24;
  s.hidden_dim = 2048;
  s.num_heads = 16;
  s.num_kv_heads = 16;
  s.head_dim = 128;
  s.ffn_dim = 1408;
  s.vocab_size = 151936;
  s.context_length = 8192;
  s.rope_theta = 1000000.0f;
  s.rms_norm_eps = 1e-6f;
  s.qkv_bias = true;
  s.num_experts = 60;
  s.num_experts_used = 4;
  s.shared_expert_ffn_dim = 5632;
  return s;
}

// Qwen2-57B-A14B (config.json of Qwen/Qwen2-57B-A14B): 64 experts, top 8, 2560 wide; shared
// expert 20480.
ModelShape qwen2moe_57b() {
  ModelShape s;
  s.name = "qwen2moe-57b-a14b";
  s.arch = "qwen2moe";
  s.description =
      "Qwen2-57B-A14B: 28 layers, hidden 3584, 28/4 heads, 64 experts top-8 of ffn 2560, "
      "shared expert 20480, qkv biases, vocab 151936";
  s.num_layers = 28;
  s.hidden_dim = 3584;
  s.num_heads = 28;
  s.num_kv_heads = 4;
  s.head_dim = 128;
  s.ffn_dim = 2560;
  s.vocab_size = 151936;
  s.context_length = 32768;
  s.rope_theta = 1000000.0f;
  s.rms_norm_eps = 1e-6f;
  s.qkv_bias = true;
  s.num_experts = 64;
  s.num_experts_used = 8;
  s.shared_expert_ffn_dim = 20480;
  return s;
}

// Test shapes: every feature of the big ones at a size that quantizes in milliseconds.
ModelShape tiny() {
  ModelShape s;
  s.name = "tiny";
  s.arch = "llama";
  s.description = "test shape: llama, 2 layers, hidden 256, 4/2 heads, ffn 512";
  s.num_layers = 2;
  s.hidden_dim = 256;
  s.num_heads = 4;
  s.num_kv_heads = 2;
  s.head_dim = 64;
  s.ffn_dim = 512;
  s.vocab_size = 32000;
  s.context_length = 512;
  return s;
}

ModelShape tiny_llama3() {
  ModelShape s = tiny();
  s.name = "tiny-llama3";
  s.description = "test shape: tiny with tied embeddings and Llama-3 rope scaling";
  s.rope_theta = 500000.0f;
  s.tied_embeddings = true;
  s.llama3_rope = Llama3RopeScaling{32.0f, 1.0f, 4.0f, 8192};
  return s;
}

ModelShape tiny_qwen2() {
  ModelShape s;
  s.name = "tiny-qwen2";
  s.arch = "qwen2";
  s.description =
      "test shape: qwen2, 2 layers, hidden 384 (not a multiple of 256), 6/2 heads, ffn 1024, "
      "qkv biases, tied";
  s.num_layers = 2;
  s.hidden_dim = 384;
  s.num_heads = 6;
  s.num_kv_heads = 2;
  s.head_dim = 64;
  s.ffn_dim = 1024;
  s.vocab_size = 32000;
  s.context_length = 512;
  s.rope_theta = 1000000.0f;
  s.rms_norm_eps = 1e-6f;
  s.qkv_bias = true;
  s.tied_embeddings = true;
  return s;
}

ModelShape tiny_moe() {
  ModelShape s = tiny();
  s.name = "tiny-moe";
  s.description = "test shape: tiny with 8 experts top-2 (Mixtral layout), ffn 256";
  s.ffn_dim = 256;
  s.num_experts = 8;
  s.num_experts_used = 2;
  return s;
}

ModelShape tiny_qwen2moe() {
  ModelShape s = tiny_qwen2();
  s.name = "tiny-qwen2moe";
  s.arch = "qwen2moe";
  s.description =
      "test shape: qwen2moe, 2 layers, hidden 384, 64 experts top-8 of ffn 64, shared expert 256";
  s.tied_embeddings = false;
  s.ffn_dim = 64;
  s.num_experts = 64;
  s.num_experts_used = 8;
  s.shared_expert_ffn_dim = 256;
  return s;
}

const std::array<ModelShape, 11>& shapes() {
  static const std::array<ModelShape, 11> kShapes = {
      tinyllama(), llama32_1b(),  qwen25_05b(), mixtral_tiny(), qwen2moe_a27b(), qwen2moe_57b(),
      tiny(),      tiny_llama3(), tiny_qwen2(), tiny_moe(),     tiny_qwen2moe(),
  };
  return kShapes;
}

}  // namespace

std::span<const ModelShape> all_model_shapes() {
  return shapes();
}

const ModelShape* find_model_shape(std::string_view name) {
  for (const ModelShape& s : shapes()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string model_shape_names() {
  std::string out;
  for (const ModelShape& s : shapes()) {
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

std::vector<float> llama3_rope_factors(const Llama3RopeScaling& scaling, float rope_theta,
                                       int32_t head_dim) {
  // The converter works on float32 tensors: inverse frequencies base^(-2i/dim), then per pair a
  // wavelength 2*pi/freq compared against the original context divided by the two factors.
  const float old_ctx = static_cast<float>(scaling.original_context);
  const float low_freq_wavelen = old_ctx / scaling.low_freq_factor;
  const float high_freq_wavelen = old_ctx / scaling.high_freq_factor;
  std::vector<float> out;
  out.reserve(static_cast<size_t>(head_dim / 2));
  for (int32_t i = 0; i < head_dim; i += 2) {
    const float exponent = static_cast<float>(i) / static_cast<float>(head_dim);
    const float freq = 1.0f / std::pow(rope_theta, exponent);
    const float wavelen = static_cast<float>(2.0 * std::numbers::pi) / freq;
    if (wavelen < high_freq_wavelen) {
      out.push_back(1.0f);
    } else if (wavelen > low_freq_wavelen) {
      out.push_back(scaling.factor);
    } else {
      const float smooth = (old_ctx / wavelen - scaling.low_freq_factor) /
                           (scaling.high_freq_factor - scaling.low_freq_factor);
      out.push_back(1.0f / ((1.0f - smooth) / scaling.factor + smooth));
    }
  }
  return out;
}

}  // namespace pagoda::convert
