#include "loader/hf/hf_tokenizer_files.h"

#include "base/strict_json.h"
#include "format/hf_config.h"
#include "loader/hf/hf_checkpoint.h"
#include "loader/hf/hf_wordpiece.h"

namespace pagoda::loader {
namespace {

constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;
constexpr uint64_t kMaxTokenizerBytes = uint64_t{512} << 20;

// An optional file: nullopt when absent, an error when unreadable.
Result<std::optional<std::string>> optional_file(const std::string& dir, const std::string& name,
                                                 uint64_t max_bytes) {
  auto text = read_model_file(dir, name, max_bytes);
  if (text.ok()) return std::optional<std::string>(std::move(text).value());
  if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
  return text.status();
}

}  // namespace

Result<HfTokenizerFiles> load_hf_tokenizer(const std::string& dir) {
  auto ctx = [&dir](const Status& s) { return s.with_context(dir); };
  HfTokenizerFiles out;
  tokenizer::HfTokenizerOptions options;

  PAGODA_ASSIGN_OR_RETURN(auto config_text,
                          optional_file(dir, "tokenizer_config.json", kMaxConfigBytes));
  if (config_text) {
    auto tc = format::parse_hf_tokenizer_config(*config_text);
    if (!tc.ok()) return ctx(tc.status());
    options.bos_token = tc->bos_token;
    options.eos_token = tc->eos_token;
    options.unk_token = tc->unk_token;
    options.pad_token = tc->pad_token;
    options.add_bos = tc->add_bos_token;
    options.add_eos = tc->add_eos_token;
    options.clean_up_spaces = tc->clean_up_tokenization_spaces;
    out.chat_template = tc->chat_template;
  }
  if (out.chat_template.empty()) {
    PAGODA_ASSIGN_OR_RETURN(auto jinja, optional_file(dir, "chat_template.jinja", kMaxConfigBytes));
    if (jinja) out.chat_template = std::move(*jinja);
  }
  if (out.chat_template.empty()) {
    PAGODA_ASSIGN_OR_RETURN(auto json_text,
                            optional_file(dir, "chat_template.json", kMaxConfigBytes));
    if (json_text) {
      auto parsed = parse_strict_json(*json_text, "chat_template.json");
      if (!parsed.ok()) return ctx(parsed.status());
      auto it = parsed->is_object() ? parsed->find("chat_template") : parsed->end();
      if (it == parsed->end() || !it->is_string()) {
        return ctx(invalid_argument("chat_template.json: no string chat_template"));
      }
      out.chat_template = it->get<std::string>();
    }
  }

  // End-of-generation ids: generation_config.json, else config.json.
  PAGODA_ASSIGN_OR_RETURN(auto gen_text,
                          optional_file(dir, "generation_config.json", kMaxConfigBytes));
  if (gen_text) {
    auto gen = format::parse_hf_generation_config(*gen_text);
    if (!gen.ok()) return ctx(gen.status());
    options.extra_eos_ids = gen->eos_token_id;
  }
  if (options.extra_eos_ids.empty()) {
    PAGODA_ASSIGN_OR_RETURN(auto cfg_text, optional_file(dir, "config.json", kMaxConfigBytes));
    if (cfg_text) {
      auto cfg = format::parse_hf_config(*cfg_text);
      if (!cfg.ok()) return ctx(cfg.status());
      options.extra_eos_ids = cfg->eos_token_id;
    }
  }

  // BERT's WordPiece (tokenizer.json model WordPiece, or vocab.txt): hf_wordpiece.h.
  PAGODA_ASSIGN_OR_RETURN(std::optional<tokenizer::Vocab> wordpiece, load_hf_wordpiece(dir));
  if (wordpiece) {
    out.vocab = std::move(*wordpiece);
    return out;
  }
  auto json_text = read_model_file(dir, "tokenizer.json", kMaxTokenizerBytes);
  if (!json_text.ok()) {
    if (json_text.status().code() == StatusCode::kNotFound) {
      return not_found("{}: no tokenizer.json (tokenizer.model alone is not supported)", dir);
    }
    return json_text.status();
  }
  auto vocab = tokenizer::vocab_from_hf_tokenizer_json(*json_text, options, &out.summary);
  if (!vocab.ok()) return ctx(vocab.status());
  out.vocab = std::move(vocab).value();
  return out;
}

}  // namespace pagoda::loader
