// SpmEncoder: SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm runs it. The text is split
// into UTF-8 characters; adjacent pairs whose concatenation is a token are merged, highest token
// score first (ties: leftmost), until no pair forms a token; characters left that are not tokens
// fall back to <0xXX> byte tokens (or the byte as a one-character token, or UNK).
#pragma once

#include <array>
#include <string_view>
#include <vector>

#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

class SpmEncoder {
 public:
  // `vocab` and `index` must outlive the encoder.
  SpmEncoder(const Vocab& vocab, const TokenIndex& index);

  // Appends the ids of `text`, whose spaces are already escaped to ▁ (U+2581). O(n log n).
  void encode(std::string_view text, std::vector<TokenId>& out) const;

 private:
  float score(TokenId id) const;
  void append_bytes(std::string_view bytes, std::vector<TokenId>& out) const;

  const Vocab& vocab_;
  const TokenIndex& index_;
  std::array<TokenId, 256> byte_tokens_;  // fallback token per byte, -1 if none
};

}  // namespace pagoda::tokenizer
