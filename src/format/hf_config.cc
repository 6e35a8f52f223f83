#include "format/hf_config.h"

#include <set>

#include "base/strict_json.h"
#include "format/json_fields.h"

namespace pagoda::format {
namespace {

using nlohmann::json;

Result<json> parse_object(std::string_view text, std::string_view file) {
  PAGODA_ASSIGN_OR_RETURN(json root, parse_strict_json(text, file));
  if (!root.is_object()) return invalid_argument("{}: not a JSON object", file);
  return root;
}

}  // namespace

namespace {

// The model fields of one config object: config.json's top level, or a multimodal config's
// text_config (prefix "text_config.", named so in errors).
Result<HfConfig> parse_config_object(const json& root, std::string_view kFile,
                                     const std::string& prefix) {
  Fields f(root, kFile, prefix);
  HfConfig c;
  if (const json* a = f.get("architectures")) {
    if (!a->is_array()) return f.wrong("architectures", *a, "a list of strings");
    for (const json& e : *a) {
      if (!e.is_string()) return f.wrong("architectures", *a, "a list of strings");
      c.architectures.push_back(e.get<std::string>());
    }
  }
  std::optional<std::string> model_type;
  PAGODA_RETURN_IF_ERROR(f.read("model_type", model_type));
  c.model_type = model_type.value_or("");
  PAGODA_RETURN_IF_ERROR(f.read("hidden_size", c.hidden_size));
  PAGODA_RETURN_IF_ERROR(f.read("intermediate_size", c.intermediate_size));
  PAGODA_RETURN_IF_ERROR(f.read("num_hidden_layers", c.num_hidden_layers));
  PAGODA_RETURN_IF_ERROR(f.read("num_attention_heads", c.num_attention_heads));
  PAGODA_RETURN_IF_ERROR(f.read("num_key_value_heads", c.num_key_value_heads));
  PAGODA_RETURN_IF_ERROR(f.read("head_dim", c.head_dim));
  PAGODA_RETURN_IF_ERROR(f.read("vocab_size", c.vocab_size));
  PAGODA_RETURN_IF_ERROR(f.read("max_position_embeddings", c.max_position_embeddings));
  PAGODA_RETURN_IF_ERROR(f.read("rms_norm_eps", c.rms_norm_eps));
  PAGODA_RETURN_IF_ERROR(f.read("rope_theta", c.rope_theta));
  PAGODA_RETURN_IF_ERROR(
      f.read("original_max_position_embeddings", c.original_max_position_embeddings));
  PAGODA_RETURN_IF_ERROR(f.read("partial_rotary_factor", c.partial_rotary_factor));
  PAGODA_RETURN_IF_ERROR(f.read("tie_word_embeddings", c.tie_word_embeddings));
  PAGODA_RETURN_IF_ERROR(f.read("attention_bias", c.attention_bias));
  PAGODA_RETURN_IF_ERROR(f.read("mlp_bias", c.mlp_bias));
  PAGODA_RETURN_IF_ERROR(f.read("use_sliding_window", c.use_sliding_window));
  PAGODA_RETURN_IF_ERROR(f.read("sliding_window", c.sliding_window));
  PAGODA_RETURN_IF_ERROR(f.read("max_window_layers", c.max_window_layers));
  PAGODA_RETURN_IF_ERROR(f.read("num_local_experts", c.num_local_experts));
  PAGODA_RETURN_IF_ERROR(f.read("num_experts_per_tok", c.num_experts_per_tok));
  PAGODA_RETURN_IF_ERROR(f.read("hidden_act", c.hidden_act));
  PAGODA_RETURN_IF_ERROR(f.read("layer_norm_eps", c.layer_norm_eps));
  PAGODA_RETURN_IF_ERROR(f.read("type_vocab_size", c.type_vocab_size));
  PAGODA_RETURN_IF_ERROR(f.read("position_embedding_type", c.position_embedding_type));
  PAGODA_RETURN_IF_ERROR(f.read("torch_dtype", c.torch_dtype));
  PAGODA_RETURN_IF_ERROR(f.read("_name_or_path", c.name_or_path));
  PAGODA_RETURN_IF_ERROR(f.read("bos_token_id", c.bos_token_id));
  PAGODA_RETURN_IF_ERROR(f.read("eos_token_id", c.eos_token_id));
  PAGODA_RETURN_IF_ERROR(f.read("hidden_activation", c.hidden_activation));
  PAGODA_RETURN_IF_ERROR(f.read("query_pre_attn_scalar", c.query_pre_attn_scalar));
  PAGODA_RETURN_IF_ERROR(f.read("attn_logit_softcapping", c.attn_logit_softcapping));
  PAGODA_RETURN_IF_ERROR(f.read("final_logit_softcapping", c.final_logit_softcapping));
  PAGODA_RETURN_IF_ERROR(f.read("rope_local_base_freq", c.rope_local_base_freq));
  PAGODA_RETURN_IF_ERROR(f.read("sliding_window_pattern", c.sliding_window_pattern));
  PAGODA_RETURN_IF_ERROR(f.read("layer_types", c.layer_types));
  PAGODA_RETURN_IF_ERROR(f.read("num_experts", c.num_experts));
  PAGODA_RETURN_IF_ERROR(f.read("moe_intermediate_size", c.moe_intermediate_size));
  PAGODA_RETURN_IF_ERROR(
      f.read("shared_expert_intermediate_size", c.shared_expert_intermediate_size));
  PAGODA_RETURN_IF_ERROR(f.read("decoder_sparse_step", c.decoder_sparse_step));
  PAGODA_RETURN_IF_ERROR(f.read("norm_topk_prob", c.norm_topk_prob));
  PAGODA_RETURN_IF_ERROR(f.read("mlp_only_layers", c.mlp_only_layers));
  PAGODA_RETURN_IF_ERROR(f.read("q_lora_rank", c.q_lora_rank));
  PAGODA_RETURN_IF_ERROR(f.read("kv_lora_rank", c.kv_lora_rank));
  PAGODA_RETURN_IF_ERROR(f.read("qk_nope_head_dim", c.qk_nope_head_dim));
  PAGODA_RETURN_IF_ERROR(f.read("qk_rope_head_dim", c.qk_rope_head_dim));
  PAGODA_RETURN_IF_ERROR(f.read("v_head_dim", c.v_head_dim));
  PAGODA_RETURN_IF_ERROR(f.read("n_routed_experts", c.n_routed_experts));
  PAGODA_RETURN_IF_ERROR(f.read("n_shared_experts", c.n_shared_experts));
  PAGODA_RETURN_IF_ERROR(f.read("first_k_dense_replace", c.first_k_dense_replace));
  PAGODA_RETURN_IF_ERROR(f.read("moe_layer_freq", c.moe_layer_freq));
  PAGODA_RETURN_IF_ERROR(f.read("num_nextn_predict_layers", c.num_nextn_predict_layers));
  PAGODA_RETURN_IF_ERROR(f.read("n_group", c.n_group));
  PAGODA_RETURN_IF_ERROR(f.read("topk_group", c.topk_group));
  PAGODA_RETURN_IF_ERROR(f.read("routed_scaling_factor", c.routed_scaling_factor));
  PAGODA_RETURN_IF_ERROR(f.read("topk_method", c.topk_method));
  PAGODA_RETURN_IF_ERROR(f.read("scoring_func", c.scoring_func));
  if (const json* rs = f.get("rope_scaling")) {
    if (!rs->is_object()) return f.wrong("rope_scaling", *rs, "an object");
    Fields r(*rs, kFile, prefix + "rope_scaling.");
    HfRopeScaling s;
    std::optional<std::string> type, legacy_type;
    PAGODA_RETURN_IF_ERROR(r.read("rope_type", type));
    PAGODA_RETURN_IF_ERROR(r.read("type", legacy_type));
    if (!type && !legacy_type) {
      return invalid_argument("{}: rope_scaling has neither rope_type nor type", kFile);
    }
    s.type = type ? *type : *legacy_type;
    PAGODA_RETURN_IF_ERROR(r.read("factor", s.factor));
    PAGODA_RETURN_IF_ERROR(r.read("low_freq_factor", s.low_freq_factor));
    PAGODA_RETURN_IF_ERROR(r.read("high_freq_factor", s.high_freq_factor));
    PAGODA_RETURN_IF_ERROR(
        r.read("original_max_position_embeddings", s.original_max_position_embeddings));
    PAGODA_RETURN_IF_ERROR(r.read("beta_fast", s.beta_fast));
    PAGODA_RETURN_IF_ERROR(r.read("beta_slow", s.beta_slow));
    PAGODA_RETURN_IF_ERROR(r.read("attention_factor", s.attention_factor));
    PAGODA_RETURN_IF_ERROR(r.read("mscale", s.mscale));
    PAGODA_RETURN_IF_ERROR(r.read("mscale_all_dim", s.mscale_all_dim));
    PAGODA_RETURN_IF_ERROR(r.read("long_factor", s.long_factor));
    PAGODA_RETURN_IF_ERROR(r.read("short_factor", s.short_factor));
    c.rope_scaling = std::move(s);
  }
  return c;
}

}  // namespace

Result<HfConfig> parse_hf_config(std::string_view text) {
  constexpr std::string_view kFile = "config.json";
  PAGODA_ASSIGN_OR_RETURN(json root, parse_object(text, kFile));
  PAGODA_ASSIGN_OR_RETURN(HfConfig c, parse_config_object(root, kFile, ""));
  Fields f(root, kFile);
  const json* tc = f.get("text_config");
  if (tc == nullptr) return c;
  // A multimodal checkpoint (Gemma3ForConditionalGeneration): the language model's fields are
  // in text_config; the architecture, model_type and token ids stay the top level's.
  if (!tc->is_object()) return f.wrong("text_config", *tc, "an object");
  PAGODA_ASSIGN_OR_RETURN(HfConfig t, parse_config_object(*tc, kFile, "text_config."));
  t.architectures = std::move(c.architectures);
  t.model_type = std::move(c.model_type);
  if (t.bos_token_id.empty()) t.bos_token_id = std::move(c.bos_token_id);
  if (t.eos_token_id.empty()) t.eos_token_id = std::move(c.eos_token_id);
  if (!t.torch_dtype) t.torch_dtype = std::move(c.torch_dtype);
  if (!t.name_or_path) t.name_or_path = std::move(c.name_or_path);
  t.from_text_config = true;
  return t;
}

Result<HfGenerationConfig> parse_hf_generation_config(std::string_view text) {
  constexpr std::string_view kFile = "generation_config.json";
  PAGODA_ASSIGN_OR_RETURN(json root, parse_object(text, kFile));
  Fields f(root, kFile);
  HfGenerationConfig g;
  PAGODA_RETURN_IF_ERROR(f.read("do_sample", g.do_sample));
  PAGODA_RETURN_IF_ERROR(f.read("temperature", g.temperature));
  PAGODA_RETURN_IF_ERROR(f.read("top_p", g.top_p));
  PAGODA_RETURN_IF_ERROR(f.read("min_p", g.min_p));
  PAGODA_RETURN_IF_ERROR(f.read("repetition_penalty", g.repetition_penalty));
  PAGODA_RETURN_IF_ERROR(f.read("top_k", g.top_k));
  PAGODA_RETURN_IF_ERROR(f.read("max_new_tokens", g.max_new_tokens));
  PAGODA_RETURN_IF_ERROR(f.read("max_length", g.max_length));
  PAGODA_RETURN_IF_ERROR(f.read("bos_token_id", g.bos_token_id));
  PAGODA_RETURN_IF_ERROR(f.read("eos_token_id", g.eos_token_id));
  PAGODA_RETURN_IF_ERROR(f.read("pad_token_id", g.pad_token_id));
  return g;
}

Result<HfTokenizerConfig> parse_hf_tokenizer_config(std::string_view text) {
  constexpr std::string_view kFile = "tokenizer_config.json";
  PAGODA_ASSIGN_OR_RETURN(json root, parse_object(text, kFile));
  Fields f(root, kFile);
  HfTokenizerConfig t;
  if (const json* ct = f.get("chat_template")) {
    if (ct->is_string()) {
      t.chat_template = ct->get<std::string>();
    } else if (ct->is_array()) {
      for (size_t i = 0; i < ct->size(); ++i) {
        const json& e = (*ct)[i];
        const std::string field = fmt::format("chat_template[{}].", i);
        if (!e.is_object()) return f.wrong(field, e, "an object {name, template}");
        Fields ef(e, kFile, field);
        std::optional<std::string> name, tmpl;
        PAGODA_RETURN_IF_ERROR(ef.read("name", name));
        PAGODA_RETURN_IF_ERROR(ef.read("template", tmpl));
        if (!name || !tmpl) {
          return invalid_argument("{}: {} needs a string name and template", kFile, field);
        }
        t.named_chat_templates.emplace_back(*name, *tmpl);
      }
      for (const auto& [name, tmpl] : t.named_chat_templates) {
        if (name == "default") t.chat_template = tmpl;
      }
      if (t.chat_template.empty() && !t.named_chat_templates.empty()) {
        t.chat_template = t.named_chat_templates.front().second;
      }
    } else {
      return f.wrong("chat_template", *ct, "a string or a list of {name, template}");
    }
  }
  PAGODA_RETURN_IF_ERROR(f.read_token("bos_token", t.bos_token));
  PAGODA_RETURN_IF_ERROR(f.read_token("eos_token", t.eos_token));
  PAGODA_RETURN_IF_ERROR(f.read_token("unk_token", t.unk_token));
  PAGODA_RETURN_IF_ERROR(f.read_token("pad_token", t.pad_token));
  PAGODA_RETURN_IF_ERROR(f.read("add_bos_token", t.add_bos_token));
  PAGODA_RETURN_IF_ERROR(f.read("add_eos_token", t.add_eos_token));
  PAGODA_RETURN_IF_ERROR(f.read("clean_up_tokenization_spaces", t.clean_up_tokenization_spaces));
  PAGODA_RETURN_IF_ERROR(f.read("add_prefix_space", t.add_prefix_space));
  PAGODA_RETURN_IF_ERROR(f.read("legacy", t.legacy));
  PAGODA_RETURN_IF_ERROR(f.read("tokenizer_class", t.tokenizer_class));
  return t;
}

Result<HfWeightIndex> parse_hf_weight_index(std::string_view text) {
  constexpr std::string_view kFile = "model.safetensors.index.json";
  PAGODA_ASSIGN_OR_RETURN(json root, parse_object(text, kFile));
  Fields f(root, kFile);
  const json* map = f.get("weight_map");
  if (map == nullptr) return invalid_argument("{}: no weight_map", kFile);
  if (!map->is_object()) return f.wrong("weight_map", *map, "an object {tensor: file}");
  HfWeightIndex index;
  std::set<std::string> seen;
  for (const auto& [tensor, file] : map->items()) {
    if (!file.is_string()) {
      return invalid_argument("{}: weight_map[\"{}\"] is {}, not a file name", kFile, tensor,
                              shorten(file));
    }
    const std::string& name = file.get_ref<const std::string&>();
    if (name.empty() || name.front() == '.' || name.find('/') != std::string::npos ||
        name.find('\\') != std::string::npos || name.find('\0') != std::string::npos) {
      return invalid_argument("{}: weight_map[\"{}\"] = {} is not a file name in the directory",
                              kFile, tensor, shorten(file));
    }
    seen.insert(name);
    index.tensor_to_file.emplace(tensor, name);
  }
  index.shards.assign(seen.begin(), seen.end());
  return index;
}

}  // namespace pagoda::format
