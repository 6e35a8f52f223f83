// TokenTable: a vocabulary as the matcher sees it — the bytes each token adds to the output, a
// byte trie over them for mask computation, and which ids end generation. Built once per model.
//
// A token's bytes are its piece as the detokenizer emits it (SPM byte fallback decoded, ▁ as a
// space, byte-level BPE mapped back to raw bytes; possibly a partial UTF-8 sequence). Control
// tokens and tokens with no bytes never enter the trie: only end-of-generation ids may be
// sampled under a constraint, and only where the constraint may end.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagoda::structured {

struct TokenClassSplit;

// A set of bytes (bit b of word b / 64).
struct ByteClass {
  std::array<uint64_t, 4> bits{};
  bool has(uint8_t b) const { return ((bits[b / 64] >> (b % 64)) & 1) != 0; }
  void add(uint8_t b) { bits[b / 64] |= uint64_t{1} << (b % 64); }
  bool operator==(const ByteClass&) const = default;
};

class TokenTable {
 public:
  struct TrieNode {
    uint8_t byte = 0;
    uint16_t depth = 0;        // bytes from the root (root: 0)
    uint32_t subtree_end = 0;  // index one past the last node of this subtree (preorder)
    uint32_t token_begin = 0;  // tokens ending exactly here: Trie::tokens_by_node[begin, end)
    uint32_t token_end = 0;
  };
  // A byte trie over some of the tokens, in preorder; node 0 is the root (no byte).
  struct Trie {
    std::vector<TrieNode> nodes;
    std::vector<int32_t> tokens_by_node;
  };

  // `vocab_size` may exceed the tokenizer's (padded embedding rows: never allowed).
  static std::shared_ptr<const TokenTable> create(const tokenizer::Tokenizer& tokenizer,
                                                  int32_t vocab_size);
  // For tests: explicit token bytes; ids in `eog` end generation. Tokens with empty bytes are
  // left out of the trie.
  // `control`: ids whose piece is a control token's text (text() only, never in the trie).
  static std::shared_ptr<const TokenTable> from_pieces(std::vector<std::string> pieces,
                                                       std::vector<int32_t> eog,
                                                       std::vector<int32_t> control = {});

  int32_t vocab_size() const { return vocab_size_; }
  size_t num_mask_words() const { return (static_cast<size_t>(vocab_size_) + 63) / 64; }
  std::string_view bytes(int32_t token) const {
    return token >= 0 && static_cast<size_t>(token) < pieces_.size()
               ? std::string_view(pieces_[static_cast<size_t>(token)])
               : std::string_view();
  }
  // What the token adds to the output as the detokenizer shows special tokens: bytes(), or a
  // control token's own text (never in a mask; a constraint's trigger may match it).
  std::string_view text(int32_t token) const {
    const auto it = control_text_.find(token);
    return it != control_text_.end() ? std::string_view(it->second) : bytes(token);
  }
  bool is_eog(int32_t token) const {
    return token >= 0 && static_cast<size_t>(token) < eog_.size() &&
           eog_[static_cast<size_t>(token)] != 0;
  }
  const std::vector<int32_t>& eog_tokens() const { return eog_ids_; }
  // Preorder trie over every token with bytes; node 0 is the root (no byte).
  const Trie& full_trie() const { return trie_; }
  const std::vector<TrieNode>& trie() const { return trie_.nodes; }
  const std::vector<int32_t>& tokens_by_node() const { return trie_.tokens_by_node; }

  // The trie's tokens split by `cls` (token_class_split.h), built on first use and kept in an
  // LRU cache of at most kMaxSplits entries and kMaxSplitBytes (the newest always stays).
  // Thread-safe.
  static constexpr size_t kMaxSplits = 128;
  static constexpr size_t kMaxSplitBytes = size_t{128} << 20;
  std::shared_ptr<const TokenClassSplit> split(const ByteClass& cls) const;

 private:
  void build_full_trie();

  int32_t vocab_size_ = 0;
  std::vector<std::string> pieces_;  // [vocab_size]; "" = never allowed by bytes
  std::unordered_map<int32_t, std::string> control_text_;
  std::vector<uint8_t> eog_;  // [vocab_size]
  std::vector<int32_t> eog_ids_;
  Trie trie_;
  mutable std::mutex splits_mutex_;
  mutable std::vector<std::shared_ptr<const TokenClassSplit>> splits_;  // least recent first
  mutable size_t splits_bytes_ = 0;
};

}  // namespace pagoda::structured
