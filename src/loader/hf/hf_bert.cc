#include "loader/hf/hf_bert.h"

#include <span>

#include "loader/hf/hf_families.h"
#include "model/arch/arch.h"

namespace pagoda::loader {
namespace {

using model::ModelConfig;
using L = model::ConfigLimits;

constexpr std::string_view kClassifier = "BertForSequenceClassification";

Result<int32_t> bert_count(const std::optional<int64_t>& v, std::string_view field, int64_t max) {
  if (!v) return invalid_argument("config.json: {} is missing", field);
  if (*v <= 0 || *v > max) {
    return invalid_argument("config.json: {} = {} is out of range [1, {}]", field, *v, max);
  }
  return static_cast<int32_t>(*v);
}

}  // namespace

bool is_hf_bert(const format::HfConfig& hf) {
  if (hf.architectures.empty()) return hf.model_type == "bert";
  const std::string& a = hf.architectures.front();
  return a == "BertModel" || a == "BertForMaskedLM" || a == kClassifier;
}

Result<ModelConfig> bert_config_from_hf(const format::HfConfig& hf, std::string* architecture) {
  const std::string arch_name = hf.architectures.empty() ? "BertModel" : hf.architectures.front();
  if (architecture != nullptr) *architecture = arch_name;
  if (hf.hidden_act.value_or("gelu") != "gelu") {
    return unimplemented("config.json: hidden_act \"{}\" is not supported for BERT (gelu is)",
                         *hf.hidden_act);
  }
  if (hf.position_embedding_type.value_or("absolute") != "absolute") {
    return unimplemented(
        "config.json: position_embedding_type \"{}\" is not supported (absolute is)",
        *hf.position_embedding_type);
  }
  if (hf.type_vocab_size.value_or(2) != 2) {
    return unimplemented("config.json: type_vocab_size {} is not supported (2 is)",
                         *hf.type_vocab_size);
  }
  if (hf.num_key_value_heads && hf.num_key_value_heads != hf.num_attention_heads) {
    return unimplemented("config.json: num_key_value_heads differs from num_attention_heads");
  }
  ModelConfig c;
  c.arch = "bert";
  c.name = hf.name_or_path.value_or("");
  PAGODA_ASSIGN_OR_RETURN(c.num_layers,
                          bert_count(hf.num_hidden_layers, "num_hidden_layers", L::kMaxLayers));
  PAGODA_ASSIGN_OR_RETURN(c.hidden_dim, bert_count(hf.hidden_size, "hidden_size", L::kMaxHidden));
  PAGODA_ASSIGN_OR_RETURN(c.num_heads,
                          bert_count(hf.num_attention_heads, "num_attention_heads", L::kMaxHeads));
  if (c.hidden_dim % c.num_heads != 0) {
    return invalid_argument(
        "config.json: hidden_size {} is not a multiple of num_attention_heads {}", c.hidden_dim,
        c.num_heads);
  }
  c.num_kv_heads = c.num_heads;
  c.head_dim = c.hidden_dim / c.num_heads;
  c.rope_dims = c.head_dim;
  PAGODA_ASSIGN_OR_RETURN(c.ffn_dim,
                          bert_count(hf.intermediate_size, "intermediate_size", L::kMaxFfn));
  PAGODA_ASSIGN_OR_RETURN(c.vocab_size, bert_count(hf.vocab_size, "vocab_size", L::kMaxVocab));
  PAGODA_ASSIGN_OR_RETURN(c.context_length, bert_count(hf.max_position_embeddings,
                                                       "max_position_embeddings", L::kMaxContext));
  const double eps = hf.layer_norm_eps.value_or(1e-12);
  if (!(eps >= 0) || eps > L::kMaxRmsNormEps) {
    return invalid_argument("config.json: layer_norm_eps {} is out of range [0, {}]", eps,
                            L::kMaxRmsNormEps);
  }
  c.layer_norm_eps = static_cast<float>(eps);
  c.pooling_type = arch_name == kClassifier ? 4 : 2;  // rank : cls (llama.cpp's numbering)
  const model::ArchDef* arch = model::find_arch("bert");
  if (arch == nullptr) return internal_error("architecture bert is not registered");
  PAGODA_RETURN_IF_ERROR(arch->configure(c));
  PAGODA_RETURN_IF_ERROR(model::validate_config(c));
  return c;
}

std::optional<std::string> bert_gguf_name(std::string_view name, bool* skip, int32_t* layer) {
  *skip = false;
  *layer = -1;
  if (name.starts_with("bert.")) name.remove_prefix(5);
  if (name == "embeddings.position_ids" || name.starts_with("cls.predictions.") ||
      name.starts_with("cls.seq_relationship.")) {
    *skip = true;
    return std::nullopt;
  }
  // The suffix: ".weight" or ".bias".
  const size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view suffix = name.substr(dot);
  if (suffix != ".weight" && suffix != ".bias") return std::nullopt;
  std::string_view base = name.substr(0, dot);
  struct Rename {
    std::string_view hf, gguf;
  };
  static constexpr Rename kGlobal[] = {
      {"embeddings.word_embeddings", "token_embd"},
      {"embeddings.position_embeddings", "position_embd"},
      {"embeddings.token_type_embeddings", "token_types"},
      {"embeddings.LayerNorm", "token_embd_norm"},
      {"pooler.dense", "cls"},
      {"classifier", "cls.output"},
  };
  static constexpr Rename kLayer[] = {
      {"attention.self.query", "attn_q"},
      {"attention.self.key", "attn_k"},
      {"attention.self.value", "attn_v"},
      {"attention.output.dense", "attn_output"},
      {"attention.output.LayerNorm", "attn_output_norm"},
      {"intermediate.dense", "ffn_up"},
      {"output.dense", "ffn_down"},
      {"output.LayerNorm", "layer_output_norm"},
  };
  auto find = [](std::span<const Rename> table, std::string_view b) -> const Rename* {
    for (const Rename& r : table) {
      if (r.hf == b) return &r;
    }
    return nullptr;
  };
  if (const Rename* r = find(kGlobal, base)) return std::string(r->gguf) + std::string(suffix);
  constexpr std::string_view kLayers = "encoder.layer.";
  if (!base.starts_with(kLayers)) return std::nullopt;
  base.remove_prefix(kLayers.size());
  const auto n = take_hf_index(base);
  if (!n) return std::nullopt;
  const Rename* r = find(kLayer, base);
  if (r == nullptr) return std::nullopt;
  *layer = *n;
  return "blk." + std::to_string(*n) + "." + std::string(r->gguf) + std::string(suffix);
}

}  // namespace pagoda::loader
