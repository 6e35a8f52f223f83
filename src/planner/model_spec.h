// PlanModel: a model as the planner sees it, read from metadata only (never weights): its
// ModelConfig and its weight matrices by shape (rows x cols x count), with which of them a token
// multiplies with (MoE experts: the used share) and, for a GGUF file, each tensor's real type.
// Sources: a GGUF file (its metadata and tensor table), a Hugging Face directory or config.json
// (format/hf_config + loader's config mapping), or a named preset whose numbers are the
// published config.json of that model (model_presets.cc names each source).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/model_config.h"
#include "tensor/dtype.h"

namespace pagoda::planner {

struct WeightMatrix {
  std::string role;   // "attn_q", "ffn_up_exps", "token_embd", "output", ...
  int64_t rows = 0;   // output features
  int64_t cols = 0;   // input features
  int64_t count = 0;  // matrices of this shape in the model (layers, or layers x experts)
  // Experts: count = moe_layers x num_experts, of which num_experts_used per layer serve a token.
  int32_t num_experts = 0;
  int32_t num_experts_used = 0;
  bool embedding = false;              // a lookup table (one row read per token, no matmul)
  bool output = false;                 // the vocabulary projection
  std::optional<tensor::DType> dtype;  // the file's type (GGUF); nullopt: the plan's scheme decides

  int64_t num_params() const { return rows * cols * count; }
  // Matrices one token multiplies with.
  double active_count() const;
  // Matrices read by one step over `tokens` tokens (experts: the expected number of distinct
  // experts chosen, num_experts x (1 - (1 - used/num_experts)^tokens) per layer, uniform routing).
  double touched_count(double tokens) const;
};

struct PlanModel {
  std::string name;    // preset name, general.name or the path
  std::string source;  // "preset: <url>", "gguf: path", "config.json: path"
  model::ModelConfig config;
  std::vector<WeightMatrix> matrices;       // from the config (types chosen by the plan)
  std::vector<WeightMatrix> file_matrices;  // a GGUF file's tensors with their real types
  std::string file_types;                   // "Q4_0 (+Q6_K, F32)" for display

  int64_t num_params() const;
  int64_t num_active_params() const;  // per token, excluding the embedding lookup
  // KV cache elements one token adds: 2 x layers x kv_heads x head_dim, or for MLA the
  // compressed latent plus the rope key, layers x (kv_lora_rank + rope_dims) (the cache vLLM and
  // SGLang keep; pagoda's own CPU path caches expanded heads). Divided over `tp` ranks where
  // heads shard (MLA's latent is replicated on every rank).
  double kv_elements_per_token(int32_t tp) const;
};

// The matrices of a transformer with this config: attention (GQA or MLA), dense or MoE FFN
// (with shared experts), embedding and output (tied or not). Errors on overflow.
Result<std::vector<WeightMatrix>> matrices_from_config(const model::ModelConfig& c);

// A named preset ("llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b",
// "mixtral-8x7b", "deepseek-v3"), or nullopt.
std::optional<PlanModel> find_preset(std::string_view name);
std::string preset_names();

// A preset name, a GGUF file, a Hugging Face directory or a config.json path. Reads metadata
// only; every value goes through the loaders' validation (model::ConfigLimits).
Result<PlanModel> load_plan_model(const std::string& model_or_config);

}  // namespace pagoda::planner
