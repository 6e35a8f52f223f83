// Key names and defaults follow llama.cpp's llama-vocab.cpp (LLM_KV_TOKENIZER_*).
#include "loader/gguf_vocab.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "base/log.h"

namespace pagoda::loader {
namespace {

using tokenizer::TokenId;
using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::VocabKind;

// Optional key: absent → nullopt; present with the wrong type → error.
template <typename T>
Result<std::optional<T>> optional_key(Result<T> r) {
  if (r.ok()) return std::optional<T>(std::move(r).value());
  if (r.status().code() == StatusCode::kNotFound) return std::optional<T>();
  return std::move(r).take_status();
}

// Reads a special token id key into `id` (kept as is when absent or out of range).
Status read_id(const format::GgufFile& file, std::string_view key, size_t num_tokens,
               std::optional<TokenId>& id) {
  const format::GgufValue* value = file.find(key);
  if (value == nullptr) return Status();
  auto v = file.get_int(key);
  if (!v.ok()) return std::move(v).take_status();
  if (*v < 0 || static_cast<uint64_t>(*v) >= num_tokens) {
    PAGODA_LOG_WARN("{} = {} is outside the vocabulary of {} tokens; ignored", key, *v, num_tokens);
    return Status();
  }
  id = static_cast<TokenId>(*v);
  return Status();
}

// Pre-tokenizer defaults (llama.cpp's load(): clean_spaces, ignore_merges, add_bos).
void apply_pre_defaults(Vocab& vocab) {
  const std::string& pre = vocab.pre;
  vocab.add_space_prefix = false;
  vocab.clean_spaces = true;
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "falcon3") {
    vocab.ignore_merges = true;
    vocab.add_bos = true;
  } else if (pre == "tekken") {
    vocab.clean_spaces = false;
    vocab.ignore_merges = true;
    vocab.add_bos = true;
  } else if (pre == "chameleon") {
    vocab.add_bos = true;
    vocab.clean_spaces = false;
  } else if (pre == "chatglm-bpe") {
    vocab.bos_id.reset();
  } else if (pre == "deepseek-llm" || pre == "deepseek-coder" || pre == "deepseek-v3" ||
             pre == "command-r" || pre == "qwen2" || pre == "poro-chat" || pre == "viking" ||
             pre == "smollm" || pre == "gpt-4o" || pre == "llama4") {
    vocab.clean_spaces = false;
  }
}

}  // namespace

Result<Vocab> load_vocab(const format::GgufFile& file) {
  Vocab vocab;
  PAGODA_ASSIGN_OR_RETURN(std::string_view model, file.get_string("tokenizer.ggml.model"));
  PAGODA_ASSIGN_OR_RETURN(auto pre, optional_key(file.get_string("tokenizer.ggml.pre")));
  PAGODA_ASSIGN_OR_RETURN(auto tokens, file.get_string_array("tokenizer.ggml.tokens"));
  const size_t n = tokens.size();
  if (n == 0) return invalid_argument("tokenizer.ggml.tokens is empty");
  vocab.tokens.assign(tokens.begin(), tokens.end());

  if (model == "llama") {
    vocab.kind = VocabKind::kSpm;
    vocab.pre = "default";
    vocab.add_space_prefix = true;
    vocab.clean_spaces = false;
    vocab.add_bos = true;
    vocab.add_eos = false;
    // Defaults (used when in range and the keys are absent).
    if (n > 2) {
      vocab.bos_id = 1;
      vocab.eos_id = 2;
      vocab.unk_id = 0;
    }
  } else if (model == "gpt2") {
    vocab.kind = VocabKind::kBpe;
    PAGODA_ASSIGN_OR_RETURN(auto merges, file.get_string_array("tokenizer.ggml.merges"));
    vocab.merges.assign(merges.begin(), merges.end());
    if (n > 11) {
      vocab.bos_id = 11;
      vocab.eos_id = 11;
    }
    if (!pre.has_value() || pre->empty()) {
      PAGODA_LOG_WARN(
          "tokenizer.ggml.pre is missing; using the 'default' pre-tokenizer "
          "(tokenization may differ from the model's)");
      vocab.pre = "default";
    } else {
      vocab.pre = std::string(*pre);
    }
    apply_pre_defaults(vocab);
  } else if (model == "bert") {
    // llama.cpp's converter stores BERT's WordPiece vocabulary in "phantom space" form: a word's
    // first piece with a leading U+2581, a continuation without its "##". Back to the Hugging
    // Face form the WordPiece encoder matches; [CLS]-style specials are kept. llama.cpp always
    // lower-cases (uncased models); so do we.
    vocab.kind = VocabKind::kWordPiece;
    vocab.add_space_prefix = true;  // decoding: the first word loses its separating space
    vocab.clean_spaces = true;
    vocab.add_bos = true;
    vocab.add_eos = true;
    constexpr std::string_view kPhantom = "\u2581";
    for (std::string& t : vocab.tokens) {
      if (t.starts_with(kPhantom)) {
        t.erase(0, kPhantom.size());
      } else if (!(t.size() >= 2 && t.front() == '[' && t.back() == ']')) {
        t.insert(0, "##");
      }
    }
  } else {
    return unimplemented("tokenizer.ggml.model '{}' is not supported (llama, gpt2, bert are)",
                         model);
  }

  PAGODA_ASSIGN_OR_RETURN(auto add_prefix,
                          optional_key(file.get_bool("tokenizer.ggml.add_space_prefix")));
  if (add_prefix.has_value()) vocab.add_space_prefix = *add_prefix;

  if (file.find("tokenizer.ggml.scores") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(vocab.scores, file.get_float_array("tokenizer.ggml.scores"));
    if (vocab.scores.size() != n) {
      return invalid_argument("tokenizer.ggml.scores has {} entries for {} tokens",
                              vocab.scores.size(), n);
    }
  }
  if (file.find("tokenizer.ggml.token_type") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(auto types, file.get_int_array("tokenizer.ggml.token_type"));
    if (types.size() != n) {
      return invalid_argument("tokenizer.ggml.token_type has {} entries for {} tokens",
                              types.size(), n);
    }
    vocab.token_types.resize(n);
    for (size_t i = 0; i < n; ++i) {
      // Unknown values are "undefined", as in llama.cpp.
      vocab.token_types[i] = types[i] >= 0 && types[i] <= static_cast<int64_t>(TokenType::kByte)
                                 ? static_cast<TokenType>(types[i])
                                 : TokenType::kUndefined;
    }
  }

  struct IdKey {
    std::string_view key;
    std::optional<TokenId>* id;
  };
  const IdKey id_keys[] = {
      {"tokenizer.ggml.bos_token_id", &vocab.bos_id},
      {"tokenizer.ggml.eos_token_id", &vocab.eos_id},
      {"tokenizer.ggml.eot_token_id", &vocab.eot_id},
      {"tokenizer.ggml.eom_token_id", &vocab.eom_id},
      {"tokenizer.ggml.unknown_token_id", &vocab.unk_id},
      {"tokenizer.ggml.seperator_token_id", &vocab.sep_id},
      {"tokenizer.ggml.padding_token_id", &vocab.pad_id},
      {"tokenizer.ggml.fim_pre_token_id", &vocab.fim_pre_id},
      {"tokenizer.ggml.fim_suf_token_id", &vocab.fim_suf_id},
      {"tokenizer.ggml.fim_mid_token_id", &vocab.fim_mid_id},
      {"tokenizer.ggml.fim_pad_token_id", &vocab.fim_pad_id},
      {"tokenizer.ggml.fim_rep_token_id", &vocab.fim_rep_id},
      {"tokenizer.ggml.fim_sep_token_id", &vocab.fim_sep_id},
      // Deprecated spellings of the FIM keys.
      {"tokenizer.ggml.prefix_token_id", &vocab.fim_pre_id},
      {"tokenizer.ggml.suffix_token_id", &vocab.fim_suf_id},
      {"tokenizer.ggml.middle_token_id", &vocab.fim_mid_id},
  };
  for (const IdKey& k : id_keys)
    PAGODA_RETURN_IF_ERROR(read_id(file, k.key, n, *k.id));
  if (vocab.kind == VocabKind::kWordPiece) {
    // [CLS] text [SEP]: the cls and separator ids when the file names them.
    std::optional<TokenId> cls;
    PAGODA_RETURN_IF_ERROR(read_id(file, "tokenizer.ggml.cls_token_id", n, cls));
    if (cls) vocab.bos_id = cls;
    if (vocab.sep_id) vocab.eos_id = vocab.sep_id;
  }

  PAGODA_ASSIGN_OR_RETURN(auto add_bos,
                          optional_key(file.get_bool("tokenizer.ggml.add_bos_token")));
  if (add_bos.has_value()) vocab.add_bos = *add_bos;
  PAGODA_ASSIGN_OR_RETURN(auto add_eos,
                          optional_key(file.get_bool("tokenizer.ggml.add_eos_token")));
  if (add_eos.has_value()) vocab.add_eos = *add_eos;

  // llama.cpp strips whitespace after every special token of Phi-3 models (by model name).
  PAGODA_ASSIGN_OR_RETURN(auto name, optional_key(file.get_string("general.name")));
  if (name.has_value()) {
    std::string lower(*name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    vocab.rstrip_special =
        lower.find("phi-3") != std::string::npos || lower.find("phi3") != std::string::npos;
  }
  return vocab;
}

}  // namespace pagoda::loader
