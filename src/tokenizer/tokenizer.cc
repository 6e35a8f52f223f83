// Tokenizer::create validates a Vocab and builds VocabTokenizer: special tokens are split out
// first (SpecialTokenMatcher), then each raw fragment goes to the SPM or BPE encoder. Pieces for
// decoding are computed once per token.
#include "tokenizer/tokenizer.h"

#include <cmath>
#include <unordered_map>

#include "base/log.h"
#include "tokenizer/bpe_encoder.h"
#include "tokenizer/byte_unicode.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm_encoder.h"
#include "tokenizer/token_index.h"
#include "tokenizer/utf8.h"
#include "tokenizer/wordpiece_encoder.h"

namespace pagoda::tokenizer {
namespace {

constexpr std::string_view kSpaceEscape = "\xE2\x96\x81";  // ▁ U+2581

Status check_id(const std::optional<TokenId>& id, std::string_view name, size_t num_tokens) {
  if (id.has_value() && (*id < 0 || static_cast<size_t>(*id) >= num_tokens)) {
    return out_of_range("{} {} is outside the vocabulary of {} tokens", name, *id, num_tokens);
  }
  return Status();
}

Status validate(Vocab& vocab) {
  const size_t n = vocab.tokens.size();
  if (n == 0) return invalid_argument("vocabulary is empty");
  if (n >= static_cast<size_t>(INT32_MAX)) {
    return invalid_argument("vocabulary has {} tokens, more than token ids can address", n);
  }
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    return invalid_argument("scores has {} entries for {} tokens", vocab.scores.size(), n);
  }
  for (size_t i = 0; i < vocab.scores.size(); ++i) {
    if (std::isnan(vocab.scores[i])) return invalid_argument("scores[{}] is NaN", i);
  }
  if (!vocab.token_types.empty() && vocab.token_types.size() != n) {
    return invalid_argument("token_types has {} entries for {} tokens", vocab.token_types.size(),
                            n);
  }
  for (size_t i = 0; i < vocab.token_types.size(); ++i) {
    const auto t = static_cast<int32_t>(vocab.token_types[i]);
    if (t < 0 || t > static_cast<int32_t>(TokenType::kByte)) {
      return invalid_argument("token_types[{}] is {}, not a token type (0-6)", i, t);
    }
  }
  PAGODA_RETURN_IF_ERROR(check_id(vocab.bos_id, "bos_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.eos_id, "eos_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.unk_id, "unk_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.pad_id, "pad_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.sep_id, "sep_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.eot_id, "eot_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.eom_id, "eom_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.fim_pre_id, "fim_pre_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.fim_suf_id, "fim_suf_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.fim_mid_id, "fim_mid_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.fim_pad_id, "fim_pad_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.fim_rep_id, "fim_rep_id", n));
  PAGODA_RETURN_IF_ERROR(check_id(vocab.fim_sep_id, "fim_sep_id", n));
  for (size_t i = 0; i < vocab.extra_eog_ids.size(); ++i) {
    PAGODA_RETURN_IF_ERROR(
        check_id(vocab.extra_eog_ids[i], fmt::format("extra_eog_ids[{}]", i), n));
  }
  // llama.cpp renames empty tokens rather than refusing the vocabulary.
  for (size_t i = 0; i < n; ++i) {
    if (vocab.tokens[i].empty()) vocab.tokens[i] = fmt::format("[EMPTY_{}]", i);
  }
  if (vocab.add_bos && !vocab.bos_id.has_value()) {
    PAGODA_LOG_WARN("vocabulary asks for a BOS token but has none; not adding it");
    vocab.add_bos = false;
  }
  if (vocab.add_eos && !vocab.eos_id.has_value()) {
    PAGODA_LOG_WARN("vocabulary asks for an EOS token but has none; not adding it");
    vocab.add_eos = false;
  }
  return Status();
}

// The <0xXX> byte a token text names, or -1.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    int digit;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else {
      return -1;
    }
    value = value * 16 + digit;
  }
  return value;
}

// Byte-level BPE token text → raw bytes (code points outside the mapping are kept as UTF-8).
std::string decode_byte_level(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8::valid_sequence_length(text, pos);
    if (len == 0) {
      out.push_back(text[pos++]);
      continue;
    }
    const int byte = unicode_to_byte(utf8::decode(text, pos, len));
    if (byte >= 0) {
      out.push_back(static_cast<char>(byte));
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
  return out;
}

// llama_detokenize's clean_up_tokenization_spaces, as three passes over the text:
// drop a space before ?!., ; turn " ' " into "'"; drop the space before 's 'm 're 've.
std::string clean_up_spaces(std::string_view in) {
  if (in.empty()) return std::string();
  // Pass 1.
  std::string a;
  a.reserve(in.size());
  a.push_back(in[0]);
  for (size_t i = 1; i < in.size(); ++i) {
    const char x = in[i];
    if (in[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) a.pop_back();
    a.push_back(x);
  }
  // Pass 2. After a match the following space is dropped and can't be the "space before" of the
  // next apostrophe.
  std::string b;
  b.reserve(a.size());
  b.push_back(a[0]);
  size_t dropped = std::string::npos;
  for (size_t i = 1; i < a.size(); ++i) {
    const char x = a[i];
    const bool prev_space = i - 1 != dropped && a[i - 1] == ' ';
    if (x == '\'' && i + 1 < a.size() && prev_space && a[i + 1] == ' ') {
      b.pop_back();
      b.push_back(x);
      dropped = ++i;
      continue;
    }
    b.push_back(x);
  }
  // Pass 3.
  std::string c;
  c.reserve(b.size());
  c.push_back(b[0]);
  for (size_t i = 1; i < b.size(); ++i) {
    const char x = b[i];
    if (b[i - 1] == ' ' && x == '\'' && i + 1 < b.size()) {
      const char x1 = b[i + 1];
      if (x1 == 's' || x1 == 'm') {
        c.pop_back();
      } else if (i + 2 < b.size() && ((x1 == 'r' || x1 == 'v') && b[i + 2] == 'e')) {
        c.pop_back();
      }
    }
    c.push_back(x);
  }
  return c;
}

class VocabTokenizer final : public Tokenizer {
 public:
  explicit VocabTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)), special_(vocab_) {}

  Status init() {
    const size_t n = vocab_.tokens.size();
    index_.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      if (!index_.insert(vocab_.tokens[i], static_cast<TokenId>(i))) {
        const TokenId first = index_.find(vocab_.tokens[i]);
        return invalid_argument("tokens[{}] repeats tokens[{}] ('{}')", i, first,
                                vocab_.tokens[i].substr(0, 64));
      }
    }
    if (vocab_.kind == VocabKind::kSpm) {
      spm_ = std::make_unique<SpmEncoder>(vocab_, index_);
    } else if (vocab_.kind == VocabKind::kWordPiece) {
      if (!vocab_.unk_id) return invalid_argument("a WordPiece vocabulary needs unk_id ([UNK])");
      wordpiece_ = std::make_unique<WordPieceEncoder>(index_, *vocab_.unk_id, vocab_.lower_case);
    } else {
      PAGODA_ASSIGN_OR_RETURN(bpe_, BpeEncoder::create(vocab_, index_));
    }
    pieces_.resize(n);
    for (size_t i = 0; i < n; ++i)
      pieces_[i] = make_piece(i);
    return Status();
  }

  std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options) const override {
    std::vector<TokenId> out;
    std::vector<Fragment> fragments;
    special_.partition(text, options.parse_special, fragments);
    if (options.add_special && vocab_.add_bos) out.push_back(*vocab_.bos_id);
    std::string escaped;
    bool prev_special = true;  // SPM: a fragment at the start or after a special token gets ▁
    for (const Fragment& f : fragments) {
      if (f.is_token) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      const std::string_view raw = text.substr(f.begin, f.end - f.begin);
      if (spm_) {
        escaped.clear();
        if (vocab_.add_space_prefix && prev_special) escaped.append(kSpaceEscape);
        for (char c : raw) {
          if (c == ' ') {
            escaped.append(kSpaceEscape);
          } else {
            escaped.push_back(c);
          }
        }
        spm_->encode(escaped, out);
      } else if (wordpiece_) {
        wordpiece_->encode(raw, out);
      } else {
        bpe_->encode(raw, out);
      }
      prev_special = false;
    }
    if (options.add_special && vocab_.add_eos) out.push_back(*vocab_.eos_id);
    return out;
  }

  std::string token_to_piece(TokenId id, bool special) const override {
    if (id < 0 || id >= num_tokens()) return std::string();
    if (!special && is_control_or_unknown(id)) return std::string();
    return pieces_[static_cast<size_t>(id)];
  }

  std::string decode(const std::vector<TokenId>& ids, bool special) const override {
    std::string out;
    bool remove_space = vocab_.add_space_prefix;
    for (TokenId id : ids) {
      if (id < 0 || id >= num_tokens()) continue;
      std::string_view piece;
      if (special || !is_control_or_unknown(id)) piece = pieces_[static_cast<size_t>(id)];
      if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
      remove_space = false;
      out.append(piece);
    }
    return vocab_.clean_spaces ? clean_up_spaces(out) : out;
  }

  std::optional<TokenId> find_token(std::string_view text) const override {
    const TokenId id = index_.find(text);
    if (id < 0) return std::nullopt;
    return id;
  }

 private:
  bool is_control_or_unknown(TokenId id) const {
    const TokenType t = vocab_.token_types[static_cast<size_t>(id)];
    return t == TokenType::kControl || t == TokenType::kUnknown;
  }

  // The piece with special=true (llama.cpp's token_to_piece cache).
  std::string make_piece(size_t i) const {
    const std::string& text = vocab_.tokens[i];
    switch (vocab_.token_types[i]) {
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUserDefined:
        return text;
      case TokenType::kNormal:
        if (vocab_.kind == VocabKind::kBpe) return decode_byte_level(text);
        if (vocab_.kind == VocabKind::kWordPiece) {
          // Words are space-separated; a continuation piece joins the previous one.
          return text.starts_with("##") ? text.substr(2) : " " + text;
        }
        {
          std::string out;
          out.reserve(text.size());
          for (size_t pos = 0; pos < text.size();) {
            if (text.compare(pos, kSpaceEscape.size(), kSpaceEscape) == 0) {
              out.push_back(' ');
              pos += kSpaceEscape.size();
            } else {
              out.push_back(text[pos++]);
            }
          }
          return out;
        }
      case TokenType::kByte:
        if (vocab_.kind == VocabKind::kSpm) {
          const int byte = parse_byte_token(text);
          if (byte >= 0) return std::string(1, static_cast<char>(byte));
        }
        return std::string();
      case TokenType::kUndefined:
      case TokenType::kUnused:
        return std::string();
    }
    return std::string();
  }

  TokenIndex index_;
  SpecialTokenMatcher special_;
  std::unique_ptr<SpmEncoder> spm_;
  std::unique_ptr<BpeEncoder> bpe_;
  std::unique_ptr<WordPieceEncoder> wordpiece_;
  std::vector<std::string> pieces_;
};

}  // namespace

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  eog_.assign(vocab_.tokens.size(), false);
  auto mark = [this](std::optional<TokenId> id) {
    if (id.has_value()) eog_[static_cast<size_t>(*id)] = true;
  };
  mark(vocab_.eos_id);
  mark(vocab_.eot_id);
  mark(vocab_.eom_id);
  for (TokenId id : vocab_.extra_eog_ids)
    mark(id);
}

bool Tokenizer::is_end_of_generation(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < eog_.size() && eog_[static_cast<size_t>(id)];
}

bool Tokenizer::is_control(TokenId id) const {
  return id >= 0 && static_cast<size_t>(id) < vocab_.token_types.size() &&
         vocab_.token_types[static_cast<size_t>(id)] == TokenType::kControl;
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(Vocab vocab) {
  PAGODA_RETURN_IF_ERROR(validate(vocab));
  infer_special_tokens(vocab);
  auto tokenizer = std::make_unique<VocabTokenizer>(std::move(vocab));
  PAGODA_RETURN_IF_ERROR(tokenizer->init());
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

}  // namespace pagoda::tokenizer
