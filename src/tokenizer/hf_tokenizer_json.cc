// tokenizer.json is read in three steps: the token table (model.vocab + added_tokens), the
// pipeline (normalizer, pre_tokenizer, decoder, post_processor flattened out of their Sequence
// wrappers and checked against what the two supported styles allow), then the special ids and
// flags (tokenizer_config.json's values win over what the post-processor implies).
#include "tokenizer/hf_tokenizer_json.h"

#include <limits>
#include <unordered_map>

#include "base/log.h"
#include "base/strict_json.h"

namespace pagoda::tokenizer {
namespace {

using nlohmann::json;

constexpr std::string_view kFile = "tokenizer.json";
constexpr std::string_view kSpaceEscape = "\xE2\x96\x81";  // ▁ U+2581
constexpr int64_t kMaxTokens = int64_t{1} << 22;

// Split regexes as Hugging Face files spell them, and the llama.cpp pre-tokenizer running the
// same pattern.
struct KnownRegex {
  std::string_view pattern;
  std::string_view pre;
};
constexpr KnownRegex kKnownRegexes[] = {
    {R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re", "gpt-2"},
    {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     "llama3"},
    {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     "qwen2"},
};

std::string shorten_json(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() <= 100 ? s : s.substr(0, 100) + "...";
}

std::string shorten(std::string_view s) {
  return s.size() <= 100 ? std::string(s) : std::string(s.substr(0, 100)) + "...";
}

Status wrong(std::string_view field, const json& v, std::string_view want) {
  return invalid_argument("{}: {} is {}, not {}", kFile, field, shorten_json(v), want);
}

// Optional typed members of a JSON object (null = absent).
const json* member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

Result<std::optional<bool>> opt_bool(const json& obj, std::string_view key,
                                     std::string_view field) {
  const json* v = member(obj, key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return wrong(fmt::format("{}.{}", field, key), *v, "true or false");
  return std::optional<bool>(v->get<bool>());
}

Result<std::optional<std::string>> opt_string(const json& obj, std::string_view key,
                                              std::string_view field) {
  const json* v = member(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return wrong(fmt::format("{}.{}", field, key), *v, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

// A component ({"type": ...}) and the path naming it in messages.
struct Component {
  const json* obj;
  std::string field;
  std::string type;
};

// Flattens `Sequence` wrappers (key `list_key`) into their parts, in order.
Status flatten(const json* v, const std::string& field, std::string_view list_key,
               std::vector<Component>& out, int depth = 0) {
  if (v == nullptr || v->is_null()) return Status();
  if (!v->is_object()) return wrong(field, *v, "an object");
  if (depth > 8) return invalid_argument("{}: {} nests Sequences too deeply", kFile, field);
  PAGODA_ASSIGN_OR_RETURN(auto type, opt_string(*v, "type", field));
  if (!type) return invalid_argument("{}: {} has no type", kFile, field);
  if (*type == "Sequence") {
    const json* parts = member(*v, list_key);
    if (parts == nullptr || !parts->is_array()) {
      return invalid_argument("{}: {} is a Sequence without a {} list", kFile, field, list_key);
    }
    for (size_t i = 0; i < parts->size(); ++i) {
      PAGODA_RETURN_IF_ERROR(flatten(&(*parts)[i], fmt::format("{}.{}[{}]", field, list_key, i),
                                     list_key, out, depth + 1));
    }
    return Status();
  }
  out.push_back(Component{v, field, *type});
  return Status();
}

// A Replace/Split pattern: {"String": s} or {"Regex": r}.
struct Pattern {
  bool is_regex = false;
  std::string text;
};

Result<Pattern> read_pattern(const Component& c) {
  const json* p = member(*c.obj, "pattern");
  if (p == nullptr || !p->is_object() || p->size() != 1) {
    return invalid_argument("{}: {}.pattern is not {{\"String\": ...}} or {{\"Regex\": ...}}",
                            kFile, c.field);
  }
  Pattern out;
  if (const json* s = member(*p, "String"); s != nullptr && s->is_string()) {
    out.text = s->get<std::string>();
  } else if (const json* r = member(*p, "Regex"); r != nullptr && r->is_string()) {
    out.is_regex = true;
    out.text = r->get<std::string>();
  } else {
    return invalid_argument("{}: {}.pattern is not {{\"String\": ...}} or {{\"Regex\": ...}}",
                            kFile, c.field);
  }
  return out;
}

Status unsupported(const Component& c, std::string_view why = "") {
  return unimplemented("{}: {} of type {} is not supported{}{}", kFile, c.field, c.type,
                       why.empty() ? "" : ": ", why);
}

// The token table: model.vocab and added_tokens, by id.
struct TokenTable {
  std::vector<std::string> texts;  // "" = hole
  std::vector<TokenType> types;
  std::unordered_map<std::string, TokenId> model_ids;  // model.vocab only
  size_t num_added = 0;
  bool rstrip_special = false;
};

Status read_token_table(const json& root, const json& model, TokenTable& t) {
  const json* vocab = member(model, "vocab");
  if (vocab == nullptr || !vocab->is_object()) {
    return invalid_argument("{}: model.vocab is missing or not an object {{token: id}}", kFile);
  }
  int64_t max_id = -1;
  for (const auto& [text, id] : vocab->items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= static_cast<uint64_t>(kMaxTokens)) {
      return invalid_argument("{}: model.vocab[\"{}\"] is {}, not an id in [0, {})", kFile,
                              shorten(text), shorten_json(id), kMaxTokens);
    }
    max_id = std::max(max_id, id.get<int64_t>());
  }
  const json* added = member(root, "added_tokens");
  if (added != nullptr && !added->is_array()) return wrong("added_tokens", *added, "a list");
  if (added != nullptr) {
    for (size_t i = 0; i < added->size(); ++i) {
      const json& a = (*added)[i];
      const json* id = member(a, "id");
      if (id == nullptr || !id->is_number_unsigned() ||
          id->get<uint64_t>() >= static_cast<uint64_t>(kMaxTokens)) {
        return invalid_argument("{}: added_tokens[{}].id is missing or not an id in [0, {})", kFile,
                                i, kMaxTokens);
      }
      max_id = std::max(max_id, id->get<int64_t>());
    }
  }
  if (max_id < 0) return invalid_argument("{}: model.vocab is empty", kFile);
  const auto n = static_cast<size_t>(max_id + 1);
  t.texts.assign(n, std::string());
  t.types.assign(n, TokenType::kNormal);
  t.model_ids.reserve(vocab->size());
  for (const auto& [text, id_value] : vocab->items()) {
    const auto id = id_value.get<size_t>();
    if (!t.texts[id].empty()) {
      return invalid_argument("{}: model.vocab gives id {} to both \"{}\" and \"{}\"", kFile, id,
                              shorten(t.texts[id]), shorten(text));
    }
    if (text.empty())
      return invalid_argument("{}: model.vocab has an empty token (id {})", kFile, id);
    t.texts[id] = text;
    t.model_ids.emplace(text, static_cast<TokenId>(id));
  }
  if (added == nullptr) return Status();
  for (size_t i = 0; i < added->size(); ++i) {
    const json& a = (*added)[i];
    const std::string field = fmt::format("added_tokens[{}]", i);
    const auto id = (*member(a, "id")).get<size_t>();
    PAGODA_ASSIGN_OR_RETURN(auto content, opt_string(a, "content", field));
    if (!content || content->empty()) {
      return invalid_argument("{}: {}.content is missing or empty", kFile, field);
    }
    PAGODA_ASSIGN_OR_RETURN(auto special, opt_bool(a, "special", field));
    PAGODA_ASSIGN_OR_RETURN(auto rstrip, opt_bool(a, "rstrip", field));
    for (std::string_view flag : {"lstrip", "normalized", "single_word"}) {
      PAGODA_ASSIGN_OR_RETURN(auto unused, opt_bool(a, flag, field));
      (void)unused;
    }
    if (!t.texts[id].empty() && t.texts[id] != *content) {
      return invalid_argument("{}: {} gives id {} to \"{}\", but model.vocab has \"{}\" there",
                              kFile, field, id, shorten(*content), shorten(t.texts[id]));
    }
    t.texts[id] = *content;
    t.types[id] = special.value_or(false) ? TokenType::kControl : TokenType::kUserDefined;
    if (special.value_or(false) && rstrip.value_or(false) && *content != "<unk>" &&
        *content != "<s>" && *content != "<|endoftext|>") {
      t.rstrip_special = true;
    }
    ++t.num_added;
  }
  return Status();
}

// The merges as (left, right) pairs, in rank order.
Status read_merges(const json& model, std::vector<std::pair<std::string, std::string>>& out) {
  const json* merges = member(model, "merges");
  if (merges == nullptr) return Status();  // a vocabulary without merges (every word a token)
  if (!merges->is_array()) return wrong("model.merges", *merges, "a list");
  out.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 >= s.size() ||
          s.find(' ', space + 1) != std::string::npos) {
        return invalid_argument(
            "{}: model.merges[{}] \"{}\" is not two tokens separated by one "
            "space",
            kFile, i, shorten(s));
      }
      out.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string() &&
               !m[0].get_ref<const std::string&>().empty() &&
               !m[1].get_ref<const std::string&>().empty()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return wrong(fmt::format("model.merges[{}]", i), m, "\"a b\" or [\"a\", \"b\"]");
    }
  }
  return Status();
}

// The llama.cpp pre-tokenizer for a byte-level pipeline's pre-tokenizer parts.
Result<std::string> byte_level_pre(const std::vector<Component>& pre,
                                   std::vector<std::string>& notes) {
  std::vector<std::string> regexes;
  bool byte_level_seen = false;
  for (const Component& c : pre) {
    if (c.type == "ByteLevel") {
      if (byte_level_seen) return unsupported(c, "a second ByteLevel");
      byte_level_seen = true;
      PAGODA_ASSIGN_OR_RETURN(auto prefix, opt_bool(*c.obj, "add_prefix_space", c.field));
      if (prefix.value_or(false)) return unsupported(c, "add_prefix_space is true");
      PAGODA_ASSIGN_OR_RETURN(auto use_regex, opt_bool(*c.obj, "use_regex", c.field));
      if (use_regex.value_or(true)) regexes.push_back(std::string(kKnownRegexes[0].pattern));
      PAGODA_ASSIGN_OR_RETURN(auto trim, opt_bool(*c.obj, "trim_offsets", c.field));
      (void)trim;  // offsets only
    } else if (c.type == "Split") {
      if (byte_level_seen) return unsupported(c, "a Split after ByteLevel");
      PAGODA_ASSIGN_OR_RETURN(Pattern p, read_pattern(c));
      PAGODA_ASSIGN_OR_RETURN(auto behavior, opt_string(*c.obj, "behavior", c.field));
      PAGODA_ASSIGN_OR_RETURN(auto invert, opt_bool(*c.obj, "invert", c.field));
      if (!p.is_regex) return unsupported(c, "a String pattern (only Regex patterns are)");
      if (behavior.value_or("") != "Isolated" || invert.value_or(false)) {
        return unsupported(c, fmt::format("behavior {} with invert {} (only Isolated, not "
                                          "inverted)",
                                          behavior.value_or("?"), invert.value_or(false)));
      }
      regexes.push_back(p.text);
    } else {
      return unsupported(c, "byte-level pipelines take Split and ByteLevel");
    }
  }
  if (regexes.size() != 1) {
    return unimplemented(
        "{}: byte-level pre_tokenizer with {} regexes is not supported (one "
        "Split regex or ByteLevel's own)",
        kFile, regexes.size());
  }
  for (const KnownRegex& known : kKnownRegexes) {
    if (regexes[0] == known.pattern) return std::string(known.pre);
  }
  notes.push_back("unknown regex");
  return unimplemented(
      "{}: the pre_tokenizer regex \"{}\" is not one pagoda knows (GPT-2, "
      "Llama-3 and Qwen2 patterns are supported)",
      kFile, shorten(regexes[0]));
}

struct SpmPipeline {
  bool add_space_prefix = false;
  bool spaces_escaped = false;
};

Status spm_normalizers(const std::vector<Component>& norms, SpmPipeline& p,
                       std::vector<std::string>& notes) {
  for (const Component& c : norms) {
    if (c.type == "Prepend") {
      PAGODA_ASSIGN_OR_RETURN(auto s, opt_string(*c.obj, "prepend", c.field));
      if (s.value_or("") != kSpaceEscape) return unsupported(c, "it does not prepend ▁");
      p.add_space_prefix = true;
    } else if (c.type == "Replace") {
      PAGODA_ASSIGN_OR_RETURN(Pattern pat, read_pattern(c));
      PAGODA_ASSIGN_OR_RETURN(auto content, opt_string(*c.obj, "content", c.field));
      if (pat.is_regex || pat.text != " " || content.value_or("") != kSpaceEscape) {
        return unsupported(c, "only Replace(\" \", \"▁\") is");
      }
      p.spaces_escaped = true;
    } else if (c.type == "NFC") {
      notes.push_back("NFC normalizer not applied (input assumed NFC)");
    } else {
      return unsupported(c);
    }
  }
  return Status();
}

Status spm_pre_tokenizers(const std::vector<Component>& pre, SpmPipeline& p,
                          std::vector<std::string>& notes) {
  for (const Component& c : pre) {
    if (c.type != "Metaspace")
      return unsupported(c, "SentencePiece-style pipelines take Metaspace");
    PAGODA_ASSIGN_OR_RETURN(auto replacement, opt_string(*c.obj, "replacement", c.field));
    if (replacement.value_or(std::string(kSpaceEscape)) != kSpaceEscape) {
      return unsupported(c, "its replacement is not ▁");
    }
    PAGODA_ASSIGN_OR_RETURN(auto scheme, opt_string(*c.obj, "prepend_scheme", c.field));
    PAGODA_ASSIGN_OR_RETURN(auto legacy_prefix, opt_bool(*c.obj, "add_prefix_space", c.field));
    if (scheme.has_value()) {
      if (*scheme != "always" && *scheme != "first" && *scheme != "never") {
        return unsupported(c, fmt::format("prepend_scheme \"{}\"", *scheme));
      }
      p.add_space_prefix = *scheme != "never";
      if (*scheme == "first") notes.push_back("Metaspace prepend_scheme first applied as always");
    } else {
      p.add_space_prefix = legacy_prefix.value_or(true);
    }
    PAGODA_ASSIGN_OR_RETURN(auto split, opt_bool(*c.obj, "split", c.field));
    if (split.value_or(true))
      notes.push_back("Metaspace split approximated by SentencePiece merging");
    p.spaces_escaped = true;
  }
  return Status();
}

Status check_decoders(const std::vector<Component>& decoders, bool byte_level) {
  for (const Component& c : decoders) {
    if (byte_level) {
      if (c.type != "ByteLevel")
        return unsupported(c, "byte-level pipelines decode with ByteLevel");
      continue;
    }
    if (c.type == "Replace") {
      PAGODA_ASSIGN_OR_RETURN(Pattern pat, read_pattern(c));
      PAGODA_ASSIGN_OR_RETURN(auto content, opt_string(*c.obj, "content", c.field));
      if (pat.is_regex || pat.text != kSpaceEscape || content.value_or("") != " ") {
        return unsupported(c, "only Replace(\"▁\", \" \") is");
      }
    } else if (c.type == "Strip") {
      PAGODA_ASSIGN_OR_RETURN(auto content, opt_string(*c.obj, "content", c.field));
      const json* start = member(*c.obj, "start");
      const json* stop = member(*c.obj, "stop");
      const bool ok =
          content.value_or("") == " " && start != nullptr && start->is_number_unsigned() &&
          start->get<uint64_t>() <= 1 &&
          (stop == nullptr || (stop->is_number_unsigned() && stop->get<uint64_t>() == 0));
      if (!ok) return unsupported(c, "only Strip(\" \", start <= 1, stop 0) is");
    } else if (c.type != "ByteFallback" && c.type != "Fuse" && c.type != "Metaspace") {
      return unsupported(c);
    }
  }
  return Status();
}

// BOS/EOS the post-processor adds: TemplateProcessing's "single" template (SpecialToken items
// before / after the sequence), with the ids from its special_tokens map.
struct PostProcessing {
  bool present = false;
  std::optional<TokenId> bos, eos;
};

Result<PostProcessing> read_post_processor(const json& root) {
  PostProcessing out;
  std::vector<Component> parts;
  PAGODA_RETURN_IF_ERROR(
      flatten(member(root, "post_processor"), "post_processor", "processors", parts));
  out.present = !parts.empty();
  for (const Component& c : parts) {
    if (c.type != "TemplateProcessing") continue;
    const json* single = member(*c.obj, "single");
    const json* specials = member(*c.obj, "special_tokens");
    if (single == nullptr || !single->is_array()) continue;
    auto special_id = [&](const json& item) -> std::optional<TokenId> {
      const json* st = member(item, "SpecialToken");
      if (st == nullptr) return std::nullopt;
      const json* name = member(*st, "id");
      if (name == nullptr || !name->is_string() || specials == nullptr) return std::nullopt;
      const json* entry = member(*specials, name->get<std::string>());
      const json* ids = entry == nullptr ? nullptr : member(*entry, "ids");
      if (ids == nullptr || !ids->is_array() || ids->size() != 1 ||
          !(*ids)[0].is_number_unsigned() || (*ids)[0].get<uint64_t>() >= kMaxTokens) {
        return std::nullopt;
      }
      return static_cast<TokenId>((*ids)[0].get<uint64_t>());
    };
    bool seen_sequence = false;
    for (const json& item : *single) {
      if (member(item, "Sequence") != nullptr) {
        seen_sequence = true;
        continue;
      }
      auto id = special_id(item);
      if (!id) continue;
      if (!seen_sequence && !out.bos) out.bos = id;
      if (seen_sequence) out.eos = id;
    }
  }
  return out;
}

}  // namespace

Result<Vocab> vocab_from_hf_tokenizer_json(std::string_view json_text,
                                           const HfTokenizerOptions& options,
                                           HfTokenizerSummary* summary) {
  PAGODA_ASSIGN_OR_RETURN(json root, parse_strict_json(json_text, kFile));
  if (!root.is_object()) return invalid_argument("{}: not a JSON object", kFile);
  const json* model = member(root, "model");
  if (model == nullptr || !model->is_object()) {
    return invalid_argument("{}: model is missing or not an object", kFile);
  }
  PAGODA_ASSIGN_OR_RETURN(auto model_type, opt_string(*model, "type", "model"));
  if (model_type.value_or("BPE") != "BPE") {
    return unimplemented("{}: model type {} is not supported (BPE is)", kFile, *model_type);
  }
  for (std::string_view key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    PAGODA_ASSIGN_OR_RETURN(auto affix, opt_string(*model, key, "model"));
    if (affix && !affix->empty()) {
      return unimplemented("{}: model.{} \"{}\" is not supported", kFile, key, *affix);
    }
  }
  if (const json* dropout = member(*model, "dropout");
      dropout != nullptr && !(dropout->is_number() && dropout->get<double>() == 0.0)) {
    return unimplemented("{}: model.dropout {} is not supported", kFile, shorten_json(*dropout));
  }
  PAGODA_ASSIGN_OR_RETURN(auto byte_fallback, opt_bool(*model, "byte_fallback", "model"));
  PAGODA_ASSIGN_OR_RETURN(auto fuse_unk, opt_bool(*model, "fuse_unk", "model"));
  PAGODA_ASSIGN_OR_RETURN(auto ignore_merges, opt_bool(*model, "ignore_merges", "model"));
  PAGODA_ASSIGN_OR_RETURN(auto model_unk, opt_string(*model, "unk_token", "model"));
  (void)fuse_unk;  // SentencePiece byte fallback leaves no unknown runs to fuse

  TokenTable table;
  PAGODA_RETURN_IF_ERROR(read_token_table(root, *model, table));
  std::vector<std::pair<std::string, std::string>> merges;
  PAGODA_RETURN_IF_ERROR(read_merges(*model, merges));
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    for (const std::string* part : {&a, &b}) {
      if (!table.model_ids.contains(*part)) {
        return invalid_argument("{}: model.merges[{}] uses \"{}\", which is not in model.vocab",
                                kFile, i, shorten(*part));
      }
    }
    if (!table.model_ids.contains(a + b)) {
      return invalid_argument("{}: model.merges[{}] makes \"{}\", which is not in model.vocab",
                              kFile, i, shorten(a + b));
    }
  }

  std::vector<Component> norms, pres, decoders;
  PAGODA_RETURN_IF_ERROR(flatten(member(root, "normalizer"), "normalizer", "normalizers", norms));
  PAGODA_RETURN_IF_ERROR(
      flatten(member(root, "pre_tokenizer"), "pre_tokenizer", "pretokenizers", pres));
  PAGODA_RETURN_IF_ERROR(flatten(member(root, "decoder"), "decoder", "decoders", decoders));
  bool byte_level = false;
  for (const Component& c : pres)
    byte_level = byte_level || c.type == "ByteLevel";

  HfTokenizerSummary sum;
  Vocab vocab;
  const size_t n = table.texts.size();
  if (byte_level) {
    vocab.kind = VocabKind::kBpe;
    for (const Component& c : norms) {
      if (c.type != "NFC") return unsupported(c, "byte-level pipelines take no normalizer but NFC");
      sum.notes.push_back("NFC normalizer not applied (input assumed NFC)");
    }
    PAGODA_ASSIGN_OR_RETURN(vocab.pre, byte_level_pre(pres, sum.notes));
    PAGODA_RETURN_IF_ERROR(check_decoders(decoders, true));
    vocab.add_space_prefix = false;
    vocab.ignore_merges = ignore_merges.value_or(false);
    vocab.merges.reserve(merges.size());
    for (const auto& [a, b] : merges) {
      if (a.find(' ', 1) != std::string::npos) {
        return unimplemented("{}: merge (\"{}\", \"{}\") has a token with a space inside", kFile,
                             shorten(a), shorten(b));
      }
      vocab.merges.push_back(a + " " + b);
    }
    sum.style = "byte-level BPE";
  } else {
    vocab.kind = VocabKind::kSpm;
    vocab.pre = "default";
    SpmPipeline p;
    PAGODA_RETURN_IF_ERROR(spm_normalizers(norms, p, sum.notes));
    PAGODA_RETURN_IF_ERROR(spm_pre_tokenizers(pres, p, sum.notes));
    if (!p.spaces_escaped) {
      return unimplemented(
          "{}: a BPE pipeline that neither maps spaces to ▁ (Replace / Metaspace) "
          "nor is byte-level is not supported",
          kFile);
    }
    PAGODA_RETURN_IF_ERROR(check_decoders(decoders, false));
    if (ignore_merges.value_or(false)) {
      sum.notes.push_back("ignore_merges not applied to SentencePiece-style merging");
    }
    vocab.add_space_prefix = p.add_space_prefix;
    // Scores: -(rank of the first merge producing the token); the rest below every merge.
    const float floor = -static_cast<float>(merges.size()) - 1.0f;
    vocab.scores.assign(n, floor);
    for (size_t i = merges.size(); i-- > 0;) {
      const auto id = table.model_ids.at(merges[i].first + merges[i].second);
      vocab.scores[static_cast<size_t>(id)] = -static_cast<float>(i);
    }
    if (byte_fallback.value_or(false)) {
      for (size_t id = 0; id < n; ++id) {
        const std::string& s = table.texts[id];
        if (table.types[id] == TokenType::kNormal && s.size() == 6 && s.starts_with("<0x") &&
            s.back() == '>') {
          table.types[id] = TokenType::kByte;
        }
      }
    } else {
      sum.notes.push_back("byte_fallback off: unknown characters use byte tokens if present");
    }
    sum.style = "SentencePiece-style BPE";
  }

  vocab.tokens.resize(n);
  vocab.token_types.resize(n);
  std::unordered_map<std::string_view, TokenId> ids;
  ids.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    if (table.texts[id].empty()) {
      vocab.tokens[id] = fmt::format("[PAD{}]", id);
      vocab.token_types[id] = TokenType::kUnused;
    } else {
      vocab.tokens[id] = table.texts[id];
      vocab.token_types[id] = table.types[id];
    }
    ids.emplace(vocab.tokens[id], static_cast<TokenId>(id));
  }
  auto lookup = [&](const std::optional<std::string>& text,
                    std::string_view what) -> std::optional<TokenId> {
    if (!text) return std::nullopt;
    auto it = ids.find(*text);
    if (it == ids.end()) {
      PAGODA_LOG_WARN("{} \"{}\" is not in the vocabulary; ignored", what, shorten(*text));
      return std::nullopt;
    }
    return it->second;
  };

  // Special ids: tokenizer_config.json, else what the tokenizer.json implies.
  PAGODA_ASSIGN_OR_RETURN(PostProcessing post, read_post_processor(root));
  const std::optional<std::string> unk_text = options.unk_token ? options.unk_token : model_unk;
  vocab.unk_id = lookup(unk_text, "unk_token");
  if (vocab.unk_id && vocab.token_types[static_cast<size_t>(*vocab.unk_id)] != TokenType::kUnused) {
    vocab.token_types[static_cast<size_t>(*vocab.unk_id)] = TokenType::kUnknown;
  }
  vocab.bos_id = options.bos_token ? lookup(options.bos_token, "bos_token") : post.bos;
  vocab.eos_id = lookup(options.eos_token, "eos_token");
  if (!vocab.eos_id && post.eos) vocab.eos_id = post.eos;
  if (vocab.kind == VocabKind::kSpm) {
    if (!vocab.bos_id && ids.contains("<s>")) vocab.bos_id = ids.at("<s>");
    if (!vocab.eos_id && ids.contains("</s>")) vocab.eos_id = ids.at("</s>");
  }
  vocab.pad_id = lookup(options.pad_token, "pad_token");
  for (const std::optional<TokenId>* id : {&vocab.bos_id, &vocab.eos_id, &vocab.pad_id}) {
    if (id->has_value() && (**id < 0 || static_cast<size_t>(**id) >= n)) {
      return invalid_argument("{}: special token id {} is outside the vocabulary of {}", kFile,
                              **id, n);
    }
  }
  for (int64_t id : options.extra_eos_ids) {
    if (id < 0 || static_cast<uint64_t>(id) >= n) {
      PAGODA_LOG_WARN("eos_token_id {} is outside the vocabulary of {} tokens; ignored", id, n);
      continue;
    }
    const auto tid = static_cast<TokenId>(id);
    if (!vocab.eos_id) {
      vocab.eos_id = tid;
    } else if (tid != *vocab.eos_id) {
      vocab.extra_eog_ids.push_back(tid);
    }
  }

  // BOS/EOS flags: tokenizer_config.json, else the post-processor, else llama.cpp's default.
  if (post.present) {
    vocab.add_bos = post.bos.has_value();
    vocab.add_eos = post.eos.has_value();
  } else {
    vocab.add_bos = vocab.kind == VocabKind::kSpm;
    vocab.add_eos = false;
  }
  if (options.add_bos) vocab.add_bos = *options.add_bos;
  if (options.add_eos) vocab.add_eos = *options.add_eos;
  if (options.clean_up_spaces) {
    vocab.clean_spaces = *options.clean_up_spaces;
  } else {
    vocab.clean_spaces = vocab.kind == VocabKind::kBpe && vocab.pre != "qwen2";
  }
  vocab.rstrip_special = table.rstrip_special;

  sum.pre = vocab.pre;
  sum.num_model_tokens = table.model_ids.size();
  sum.num_added_tokens = table.num_added;
  sum.num_merges = merges.size();
  if (summary != nullptr) *summary = std::move(sum);
  return vocab;
}

}  // namespace pagoda::tokenizer
