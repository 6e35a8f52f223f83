// Tokenizer: text ⇄ token ids for SPM and byte-level BPE vocabularies.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

struct EncodeOptions {
  bool add_special = true;    // add BOS/EOS as the vocab's add_bos/add_eos flags say
  bool parse_special = true;  // recognise control/user-defined token text like "<|eot_id|>"
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Validates `vocab` (sizes match, ids in range, merges parse) and builds a tokenizer.
  static Result<std::unique_ptr<Tokenizer>> create(Vocab vocab);

  virtual std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options) const = 0;

  // The bytes token `id` stands for (byte tokens decoded, ▁ → space, byte-level BPE mapped back
  // to raw bytes). May be a partial UTF-8 sequence. Control tokens give "" unless `special`.
  virtual std::string token_to_piece(TokenId id, bool special = false) const = 0;

  // Concatenated pieces; SPM drops the leading space of the first token when the vocab adds a
  // space prefix. Invalid UTF-8 is kept as bytes (callers sanitise for JSON).
  virtual std::string decode(const std::vector<TokenId>& ids, bool special = false) const = 0;

  const Vocab& vocab() const { return vocab_; }
  int32_t num_tokens() const { return static_cast<int32_t>(vocab_.tokens.size()); }
  // True for EOS, EOT, EOM and other end-of-generation ids.
  bool is_end_of_generation(TokenId id) const;
  bool is_control(TokenId id) const;

 protected:
  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  Vocab vocab_;
};

}  // namespace pagoda::tokenizer
