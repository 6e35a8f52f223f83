// SpmEncoder: SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm runs it. The text is split
// into UTF-8 characters; adjacent pairs whose concatenation is a token are merged, highest token
// score first (ties: leftmost), until no pair forms a token; characters left that are not tokens
// fall back to <0xXX> byte tokens (or the byte as a one-character token, or UNK).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

class SpmEncoder {
 public:
  // `vocab` and `index` must outlive the encoder.
  SpmEncoder(const Vocab& vocab, const TokenIndex& index);

  // Appends the ids of `text`, whose spaces are already escaped to ▁ (U+2581). O(n log n) in the
  // longest run without a space.
  void encode(std::string_view text, std::vector<TokenId>& out) const;

 private:
  struct Symbol;
  struct Bigram;
  struct BigramLess;
  float score(TokenId id) const;
  // Merges symbols [begin, end) among themselves and appends their ids.
  void merge_chunk(std::string_view text, std::vector<Symbol>& symbols, size_t begin, size_t end,
                   std::vector<Bigram>& heap, std::vector<TokenId>& out) const;
  void append_bytes(std::string_view bytes, std::vector<TokenId>& out) const;

  const Vocab& vocab_;
  const TokenIndex& index_;
  std::array<TokenId, 256> byte_tokens_;  // fallback token per byte, -1 if none
  // True when no token has a ▁ that follows anything but another ▁ (true of SentencePiece
  // vocabularies trained with whitespace splitting). Then no merge can cross the start of a ▁ run,
  // and each "word" can be merged on its own with the same result, in a small heap.
  bool split_at_spaces_ = false;
};

}  // namespace pagoda::tokenizer
