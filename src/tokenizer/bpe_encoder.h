// BpeEncoder: byte-level BPE as llama.cpp's llm_tokenizer_bpe runs it. The pre-tokenizer splits
// the text into words; each word's bytes are mapped to GPT-2's printable code points, split into
// characters, and adjacent pairs are merged by merge rank (lowest first, ties: leftmost) until no
// ranked pair is left. Symbols that are not tokens fall back to their single bytes (those that
// happen to be tokens).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/token_index.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

class BpeEncoder {
 public:
  // Parses vocab.merges ("left right", split at the first space after the first byte) and builds
  // the pre-tokenizer for vocab.pre. `vocab` and `index` must outlive the encoder.
  static Result<std::unique_ptr<BpeEncoder>> create(const Vocab& vocab, const TokenIndex& index);

  // Appends the ids of raw text (no special tokens inside). Thread-safe.
  void encode(std::string_view text, std::vector<TokenId>& out) const;

  const PreTokenizer& pre_tokenizer() const { return *pre_; }

 private:
  BpeEncoder(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {}
  // Rank of merging `left` and `right`, or -1. `key` is scratch space.
  int32_t rank(std::string_view left, std::string_view right, std::string& key) const;
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  const Vocab& vocab_;
  const TokenIndex& index_;
  std::unique_ptr<PreTokenizer> pre_;
  // "left right" → rank (first occurrence wins). Symbols never contain a raw space: every byte of
  // a byte-level word is mapped to a printable code point, so the key is unambiguous.
  std::unordered_map<std::string, int32_t, StringViewHash, std::equal_to<>> ranks_;
};

}  // namespace pagoda::tokenizer
