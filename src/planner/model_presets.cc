// The named presets of `pagoda plan -m NAME`: the shapes from each model's published
// config.json on the Hugging Face hub (the URL is the preset's source), so the well-known models
// can be planned without a file.
#include <array>

#include "planner/model_spec.h"

namespace pagoda::planner {
namespace {

struct Preset {
  const char* name;
  const char* source;
  model::ModelConfig config;
};

model::ModelConfig llama(int32_t layers, int32_t hidden, int32_t heads, int32_t kv_heads,
                         int32_t ffn, int32_t vocab, int32_t context) {
  model::ModelConfig c;
  c.arch = "llama";
  c.num_layers = layers;
  c.hidden_dim = hidden;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.rope_dims = c.head_dim;
  c.ffn_dim = ffn;
  c.vocab_size = vocab;
  c.context_length = context;
  return c;
}

model::ModelConfig mixtral() {
  model::ModelConfig c = llama(32, 4096, 32, 8, 14336, 32000, 32768);
  c.num_experts = 8;
  c.num_experts_used = 2;
  return c;
}

// DeepSeek-V3 (671B; the 14B multi-token-prediction module is not served): 61 layers, the first
// 3 dense (intermediate 18432), then 256 routed experts of 2048, top-8, plus one shared expert;
// MLA with q_lora_rank 1536, kv_lora_rank 512, 128 heads of 128 nope + 64 rope key dims and
// 128-dim values.
model::ModelConfig deepseek_v3() {
  model::ModelConfig c = llama(61, 7168, 128, 128, 18432, 129280, 163840);
  c.arch = "deepseek2";
  c.head_dim = 128 + 64;
  c.rope_dims = 64;
  c.v_head_dim = 128;
  c.q_lora_rank = 1536;
  c.kv_lora_rank = 512;
  c.num_experts = 256;
  c.num_experts_used = 8;
  c.leading_dense_layers = 3;
  c.expert_ffn_dim = 2048;
  c.expert_shared_count = 1;
  c.expert_gating = 2;
  return c;
}

const std::array<Preset, 7>& presets() {
  static const std::array<Preset, 7> kPresets = {{
      {"llama-2-7b", "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json",
       llama(32, 4096, 32, 32, 11008, 32000, 4096)},
      {"llama-2-13b", "https://huggingface.co/meta-llama/Llama-2-13b-hf/blob/main/config.json",
       llama(40, 5120, 40, 40, 13824, 32000, 4096)},
      {"llama-2-70b", "https://huggingface.co/meta-llama/Llama-2-70b-hf/blob/main/config.json",
       llama(80, 8192, 64, 8, 28672, 32000, 4096)},
      {"llama-3-8b", "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
       llama(32, 4096, 32, 8, 14336, 128256, 8192)},
      {"llama-3-70b", "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
       llama(80, 8192, 64, 8, 28672, 128256, 8192)},
      {"mixtral-8x7b", "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json",
       mixtral()},
      {"deepseek-v3", "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json",
       deepseek_v3()},
  }};
  return kPresets;
}

}  // namespace

std::optional<PlanModel> find_preset(std::string_view name) {
  for (const Preset& p : presets()) {
    if (name != p.name) continue;
    PlanModel m;
    m.name = p.name;
    m.source = std::string("preset: ") + p.source;
    m.config = p.config;
    m.config.name = p.name;
    auto matrices = matrices_from_config(m.config);
    if (!matrices.ok()) return std::nullopt;  // the presets are in range (planner_test)
    m.matrices = std::move(*matrices);
    return m;
  }
  return std::nullopt;
}

std::string preset_names() {
  std::string out;
  for (const Preset& p : presets())
    out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

}  // namespace pagoda::planner
