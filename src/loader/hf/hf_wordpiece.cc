#include "loader/hf/hf_wordpiece.h"

#include <unordered_map>

#include "base/strict_json.h"
#include "loader/hf/hf_checkpoint.h"
#include "model/model_config.h"

namespace pagoda::loader {
namespace {

using tokenizer::TokenId;
using tokenizer::TokenType;
using tokenizer::Vocab;

constexpr uint64_t kMaxConfigBytes = uint64_t{16} << 20;
constexpr uint64_t kMaxTokenizerBytes = uint64_t{512} << 20;
constexpr size_t kMaxTokenBytes = 1024;

// tokenizer_config.json's settings for BERT.
struct BertTokenizerSettings {
  bool lower_case = true;
  std::string cls = "[CLS]", sep = "[SEP]", unk = "[UNK]", pad = "[PAD]", mask = "[MASK]";
};

Result<BertTokenizerSettings> parse_settings(std::string_view text) {
  BertTokenizerSettings s;
  if (text.empty()) return s;
  PAGODA_ASSIGN_OR_RETURN(nlohmann::json j, parse_strict_json(text, "tokenizer_config.json"));
  if (!j.is_object()) return invalid_argument("tokenizer_config.json: not an object");
  if (auto it = j.find("do_lower_case"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return invalid_argument("tokenizer_config.json: do_lower_case is not a boolean");
    }
    s.lower_case = it->get<bool>();
  }
  struct Key {
    const char* name;
    std::string* out;
  };
  for (const Key& k : {Key{"cls_token", &s.cls}, Key{"sep_token", &s.sep}, Key{"unk_token", &s.unk},
                       Key{"pad_token", &s.pad}, Key{"mask_token", &s.mask}}) {
    auto it = j.find(k.name);
    if (it == j.end() || it->is_null()) continue;
    const nlohmann::json* v = &*it;
    if (v->is_object()) {  // an AddedToken: its content
      auto c = v->find("content");
      if (c == v->end())
        return invalid_argument("tokenizer_config.json: {} has no content", k.name);
      v = &*c;
    }
    if (!v->is_string()) {
      return invalid_argument("tokenizer_config.json: {} is not a string", k.name);
    }
    *k.out = v->get<std::string>();
  }
  return s;
}

// Fills the special ids and flags once `v.tokens` is set; `specials` are marked control.
Status finish_vocab(Vocab& v, const BertTokenizerSettings& s, std::string_view file) {
  std::unordered_map<std::string_view, TokenId> index;
  for (size_t i = 0; i < v.tokens.size(); ++i)
    index.emplace(v.tokens[i], static_cast<TokenId>(i));
  auto id_of = [&](const std::string& text, const char* what,
                   bool required) -> Result<std::optional<TokenId>> {
    auto it = index.find(text);
    if (it != index.end()) return std::optional<TokenId>(it->second);
    if (required)
      return invalid_argument("{}: the {} token \"{}\" is not in the vocabulary", file, what, text);
    return std::optional<TokenId>();
  };
  PAGODA_ASSIGN_OR_RETURN(v.bos_id, id_of(s.cls, "cls", true));
  PAGODA_ASSIGN_OR_RETURN(v.eos_id, id_of(s.sep, "sep", true));
  PAGODA_ASSIGN_OR_RETURN(v.unk_id, id_of(s.unk, "unk", true));
  PAGODA_ASSIGN_OR_RETURN(v.pad_id, id_of(s.pad, "pad", false));
  PAGODA_ASSIGN_OR_RETURN(std::optional<TokenId> mask, id_of(s.mask, "mask", false));
  v.sep_id = v.eos_id;
  v.kind = tokenizer::VocabKind::kWordPiece;
  v.lower_case = s.lower_case;
  v.add_bos = true;
  v.add_eos = true;
  v.add_space_prefix = true;
  v.clean_spaces = true;
  if (v.token_types.empty()) v.token_types.assign(v.tokens.size(), TokenType::kNormal);
  for (const std::optional<TokenId>& id : {v.bos_id, v.eos_id, v.pad_id, mask}) {
    if (id) v.token_types[static_cast<size_t>(*id)] = TokenType::kControl;
  }
  v.token_types[static_cast<size_t>(*v.unk_id)] = TokenType::kUnknown;
  return Status();
}

Status check_token(std::string_view t, size_t id, std::string_view file) {
  if (t.empty() || t.size() > kMaxTokenBytes) {
    return invalid_argument("{}: token {} has {} bytes (1 to {} allowed)", file, id, t.size(),
                            kMaxTokenBytes);
  }
  return Status();
}

}  // namespace

Result<std::optional<Vocab>> wordpiece_from_tokenizer_json(std::string_view json_text,
                                                           std::string_view tokenizer_config) {
  constexpr std::string_view kFile = "tokenizer.json";
  PAGODA_ASSIGN_OR_RETURN(nlohmann::json j, parse_strict_json(json_text, kFile));
  if (!j.is_object()) return invalid_argument("{}: not an object", kFile);
  auto model_it = j.find("model");
  if (model_it == j.end() || !model_it->is_object()) return std::optional<Vocab>();
  auto type = model_it->find("type");
  if (type == model_it->end() || !type->is_string() || type->get<std::string>() != "WordPiece") {
    return std::optional<Vocab>();
  }
  auto vocab_it = model_it->find("vocab");
  if (vocab_it == model_it->end() || !vocab_it->is_object()) {
    return invalid_argument("{}: model.vocab is not an object", kFile);
  }
  const size_t n = vocab_it->size();
  if (n == 0 || n > static_cast<size_t>(model::ConfigLimits::kMaxVocab)) {
    return invalid_argument("{}: model.vocab has {} tokens (1 to {} allowed)", kFile, n,
                            model::ConfigLimits::kMaxVocab);
  }
  Vocab v;
  v.tokens.assign(n, std::string());
  std::vector<bool> seen(n, false);
  for (const auto& [token, id_json] : vocab_it->items()) {
    if (!id_json.is_number_integer()) {
      return invalid_argument("{}: model.vocab[\"{}\"] is not an integer", kFile, token);
    }
    const int64_t id = id_json.get<int64_t>();
    if (id < 0 || static_cast<uint64_t>(id) >= n || seen[static_cast<size_t>(id)]) {
      return invalid_argument("{}: model.vocab[\"{}\"] = {} is out of range or repeated", kFile,
                              token, id);
    }
    PAGODA_RETURN_IF_ERROR(check_token(token, static_cast<size_t>(id), kFile));
    seen[static_cast<size_t>(id)] = true;
    v.tokens[static_cast<size_t>(id)] = token;
  }
  if (auto p = model_it->find("continuing_subword_prefix");
      p != model_it->end() && !(p->is_string() && p->get<std::string>() == "##")) {
    return unimplemented("{}: model.continuing_subword_prefix other than \"##\"", kFile);
  }
  PAGODA_ASSIGN_OR_RETURN(BertTokenizerSettings s, parse_settings(tokenizer_config));
  if (auto norm = j.find("normalizer"); norm != j.end() && norm->is_object()) {
    auto nt = norm->find("type");
    if (nt != norm->end() && nt->is_string() && nt->get<std::string>() == "BertNormalizer") {
      auto lc = norm->find("lowercase");
      s.lower_case = lc == norm->end() || !lc->is_boolean() || lc->get<bool>();
    }
  }
  PAGODA_RETURN_IF_ERROR(finish_vocab(v, s, kFile));
  if (auto added = j.find("added_tokens"); added != j.end() && added->is_array()) {
    for (const nlohmann::json& a : *added) {
      if (!a.is_object()) continue;
      auto id = a.find("id");
      auto special = a.find("special");
      if (id == a.end() || !id->is_number_integer() || special == a.end() ||
          !special->is_boolean() || !special->get<bool>()) {
        continue;
      }
      const int64_t i = id->get<int64_t>();
      if (i < 0 || static_cast<uint64_t>(i) >= n) {
        return invalid_argument("{}: added_tokens id {} is out of range", kFile, i);
      }
      if (v.token_types[static_cast<size_t>(i)] == TokenType::kNormal) {
        v.token_types[static_cast<size_t>(i)] = TokenType::kControl;
      }
    }
  }
  return std::optional<Vocab>(std::move(v));
}

Result<Vocab> wordpiece_from_vocab_txt(std::string_view text, std::string_view tokenizer_config) {
  constexpr std::string_view kFile = "vocab.txt";
  Vocab v;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (line.ends_with('\r')) line.remove_suffix(1);
    if (v.tokens.size() >= static_cast<size_t>(model::ConfigLimits::kMaxVocab)) {
      return invalid_argument("{}: more than {} tokens", kFile, model::ConfigLimits::kMaxVocab);
    }
    PAGODA_RETURN_IF_ERROR(check_token(line, v.tokens.size(), kFile));
    v.tokens.emplace_back(line);
    start = end + 1;
  }
  if (v.tokens.empty()) return invalid_argument("{}: no tokens", kFile);
  PAGODA_ASSIGN_OR_RETURN(BertTokenizerSettings s, parse_settings(tokenizer_config));
  PAGODA_RETURN_IF_ERROR(finish_vocab(v, s, kFile));
  return v;
}

Result<std::optional<Vocab>> load_hf_wordpiece(const std::string& dir) {
  auto ctx = [&dir](const Status& s) { return s.with_context(dir); };
  std::string config;
  auto config_text = read_model_file(dir, "tokenizer_config.json", kMaxConfigBytes);
  if (config_text.ok()) {
    config = std::move(config_text).value();
  } else if (config_text.status().code() != StatusCode::kNotFound) {
    return config_text.status();
  }
  auto json_text = read_model_file(dir, "tokenizer.json", kMaxTokenizerBytes);
  if (json_text.ok()) {
    auto v = wordpiece_from_tokenizer_json(*json_text, config);
    if (!v.ok()) return ctx(v.status());
    return v;
  }
  if (json_text.status().code() != StatusCode::kNotFound) return json_text.status();
  auto txt = read_model_file(dir, "vocab.txt", kMaxTokenizerBytes);
  if (!txt.ok()) {
    if (txt.status().code() == StatusCode::kNotFound) return std::optional<Vocab>();
    return txt.status();
  }
  auto v = wordpiece_from_vocab_txt(*txt, config);
  if (!v.ok()) return ctx(v.status());
  return std::optional<Vocab>(std::move(v).value());
}

}  // namespace pagoda::loader
