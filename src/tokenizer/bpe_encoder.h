// BpeEncoder: byte-level BPE as llama.cpp's llm_tokenizer_bpe runs it. The pre-tokenizer splits
// the text into words; each word's bytes are mapped to GPT-2's printable code points, split into
// characters, and adjacent pairs are merged by merge rank (lowest first, ties: leftmost) until no
// ranked pair is left. Symbols that are not tokens fall back to their single bytes (those that
// happen to be tokens).
#pragma once

#include <array>
#include <cstdint>
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
  struct Scratch;
  // A merge of two token ids: its rank and the id of the merged text (-1 if not a token).
  struct Merge {
    int32_t rank = -1;
    TokenId result = -1;
  };
  // Open-addressing map (left id, right id) → Merge, for the common case of both sides being
  // tokens (one probe, no string hashing).
  class PairTable {
   public:
    void reserve(size_t n);
    void insert(TokenId left, TokenId right, Merge merge);  // first insertion wins
    Merge find(TokenId left, TokenId right) const;

   private:
    static uint64_t key(TokenId l, TokenId r) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
    }
    size_t slot(uint64_t k) const { return (k * 0x9E3779B97F4A7C15ull) >> shift_; }
    std::vector<uint64_t> keys_;
    std::vector<Merge> values_;
    int shift_ = 64;
  };

  BpeEncoder(const Vocab& vocab, const TokenIndex& index) : vocab_(vocab), index_(index) {}
  Merge find_merge(std::string_view left, TokenId left_id, std::string_view right, TokenId right_id,
                   std::string& key) const;
  // Encodes one pre-tokenized word given as raw bytes.
  void encode_word(std::string_view raw, Scratch& scratch, std::vector<TokenId>& out) const;

  const Vocab& vocab_;
  const TokenIndex& index_;
  std::unique_ptr<PreTokenizer> pre_;
  std::array<TokenId, 256> byte_tokens_{};  // token of each byte's mapped code point, or -1
  PairTable pairs_;
  // "left right" → merge, for symbols that are not tokens themselves (rare). Symbols never
  // contain a raw space: every byte of a word is mapped to a printable code point.
  std::unordered_map<std::string, Merge, StringViewHash, std::equal_to<>> strings_;
};

}  // namespace pagoda::tokenizer
