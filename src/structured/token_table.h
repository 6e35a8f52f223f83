// TokenTable: a vocabulary as the matcher sees it — the bytes each token adds to the output, a
// byte trie over them for mask computation, and which ids end generation. Built once per model.
//
// A token's bytes are its piece as the detokenizer emits it (SPM byte fallback decoded, ▁ as a
// space, byte-level BPE mapped back to raw bytes; possibly a partial UTF-8 sequence). Control
// tokens and tokens with no bytes never enter the trie: only end-of-generation ids may be
// sampled under a constraint, and only where the constraint may end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagoda::structured {

class TokenTable {
 public:
  struct TrieNode {
    uint8_t byte = 0;
    uint16_t depth = 0;        // bytes from the root (root: 0)
    uint32_t subtree_end = 0;  // index one past the last node of this subtree (preorder)
    uint32_t token_begin = 0;  // tokens ending exactly here: tokens_by_node_[begin, end)
    uint32_t token_end = 0;
  };

  // `vocab_size` may exceed the tokenizer's (padded embedding rows: never allowed).
  static std::shared_ptr<const TokenTable> create(const tokenizer::Tokenizer& tokenizer,
                                                  int32_t vocab_size);
  // For tests: explicit token bytes; ids in `eog` end generation. Tokens with empty bytes are
  // left out of the trie.
  static std::shared_ptr<const TokenTable> from_pieces(std::vector<std::string> pieces,
                                                       std::vector<int32_t> eog);

  int32_t vocab_size() const { return vocab_size_; }
  size_t num_mask_words() const { return (static_cast<size_t>(vocab_size_) + 63) / 64; }
  std::string_view bytes(int32_t token) const {
    return token >= 0 && static_cast<size_t>(token) < pieces_.size()
               ? std::string_view(pieces_[static_cast<size_t>(token)])
               : std::string_view();
  }
  bool is_eog(int32_t token) const {
    return token >= 0 && static_cast<size_t>(token) < eog_.size() &&
           eog_[static_cast<size_t>(token)] != 0;
  }
  const std::vector<int32_t>& eog_tokens() const { return eog_ids_; }
  // Preorder trie; node 0 is the root (no byte).
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<int32_t>& tokens_by_node() const { return tokens_by_node_; }

 private:
  void build_trie();

  int32_t vocab_size_ = 0;
  std::vector<std::string> pieces_;  // [vocab_size]; "" = never allowed by bytes
  std::vector<uint8_t> eog_;         // [vocab_size]
  std::vector<int32_t> eog_ids_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> tokens_by_node_;
};

}  // namespace pagoda::structured
