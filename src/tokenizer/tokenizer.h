// Tokenizer: text ⇄ token ids for SPM and byte-level BPE vocabularies, reproducing llama.cpp's
// tokenizer (llama_tokenize / llama_token_to_piece / llama_detokenize) token for token.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

struct EncodeOptions {
  bool add_special = true;    // add BOS/EOS as the vocab's add_bos/add_eos flags say
  bool parse_special = true;  // recognise control token text like "<|eot_id|>" (user-defined
                              // tokens are recognised either way, as in llama.cpp)
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Validates `vocab` (non-empty, sizes match, ids in range, texts unique, merges parse, scores
  // not NaN) and builds a tokenizer. Like llama.cpp it then infers EOT/EOM/FIM/EOG tokens from
  // their text (infer_special_tokens), replaces empty token texts with "[EMPTY_<id>]", and drops
  // add_bos/add_eos when the vocab has no such token (with a warning).
  static Result<std::unique_ptr<Tokenizer>> create(Vocab vocab);

  virtual std::vector<TokenId> encode(std::string_view text,
                                      const EncodeOptions& options) const = 0;

  // The bytes token `id` stands for (byte tokens decoded, ▁ → space, byte-level BPE mapped back
  // to raw bytes). May be a partial UTF-8 sequence. Control and unknown tokens give "" unless
  // `special`. Out-of-range ids give "".
  virtual std::string token_to_piece(TokenId id, bool special = false) const = 0;

  // Concatenated pieces as llama_detokenize(remove_special=false) makes them: the first token
  // loses one leading space when the vocab adds a space prefix (SPM), and vocabs with
  // clean_spaces get its clean-up (" ," → ",", " 's" → "'s", ...). Invalid UTF-8 is kept as bytes
  // (callers sanitise for JSON). Out-of-range ids are skipped.
  virtual std::string decode(const std::vector<TokenId>& ids, bool special = false) const = 0;

  // The id whose text is exactly `text` (raw vocab form, e.g. "▁the", "Ġthe", "<|im_end|>").
  virtual std::optional<TokenId> find_token(std::string_view text) const = 0;

  const Vocab& vocab() const { return vocab_; }
  int32_t num_tokens() const { return static_cast<int32_t>(vocab_.tokens.size()); }
  // True for EOS, EOT, EOM and other end-of-generation ids.
  bool is_end_of_generation(TokenId id) const;
  bool is_control(TokenId id) const;

 protected:
  // Precondition: `vocab` validated and infer_special_tokens applied (token_types sized).
  explicit Tokenizer(Vocab vocab);
  Vocab vocab_;

 private:
  std::vector<bool> eog_;  // [num_tokens]
};

}  // namespace pagoda::tokenizer
