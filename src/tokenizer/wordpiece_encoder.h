// WordPieceEncoder: BERT's tokenizer as Hugging Face's BertTokenizer runs it (the published
// algorithm of google-research/bert tokenization.py). BasicTokenizer: drop NUL, U+FFFD and
// control characters, map whitespace to spaces, put spaces around CJK ideographs, split on
// whitespace; with lower_case, lower-case and strip accents (NFD, then drop non-spacing marks);
// split off every punctuation character (Unicode P* and the ASCII symbol ranges). WordPiece:
// each word of at most 100 characters becomes its greedy longest-match-first pieces, later
// pieces looked up with the "##" prefix; a word with no full segmentation becomes [UNK].
// Character classes and normalisation come from ICU.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

class WordPieceEncoder {
 public:
  // `index` maps the vocabulary's texts (HF form: "##ing" for continuations) to ids; it must
  // outlive the encoder. `unk_id` is the [UNK] token.
  WordPieceEncoder(const TokenIndex& index, TokenId unk_id, bool lower_case)
      : index_(index), unk_id_(unk_id), lower_case_(lower_case) {}

  // BasicTokenizer: the words of `text` (UTF-8; invalid bytes are dropped like controls).
  std::vector<std::string> basic_tokenize(std::string_view text) const;

  // Appends the ids of `text`'s word pieces (no [CLS] / [SEP]).
  void encode(std::string_view text, std::vector<TokenId>& out) const;

  static constexpr size_t kMaxWordChars = 100;

 private:
  const TokenIndex& index_;
  TokenId unk_id_;
  bool lower_case_;
};

}  // namespace pagoda::tokenizer
