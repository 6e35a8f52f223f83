// Special tokens, shared by every vocab kind: what llama.cpp infers from token text (end-of-turn,
// fill-in-the-middle and end-of-generation markers), and the split of input text around special
// tokens before the SPM/BPE models see it (llama.cpp's tokenizer_st_partition).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

// Fills in what llama.cpp infers from token text when the metadata does not say: eot_id
// ("<|eot_id|>", "<|im_end|>", "<|end|>", ...), eom_id and the FIM ids; forces those tokens to
// kControl; collects the other end-of-generation ids into extra_eog_ids. Expects token_types to be
// empty or tokens.size() (empty is filled with kNormal). Idempotent.
void infer_special_tokens(Vocab& vocab);

// One piece of partitioned text: either raw text [begin, end) or a special token.
struct Fragment {
  bool is_token = false;
  TokenId token = -1;
  size_t begin = 0;
  size_t end = 0;
};

class SpecialTokenMatcher {
 public:
  // Indexes every control, user-defined and unknown token (non-empty text). Precondition: `vocab`
  // passed Tokenizer::create's validation (unique texts, token_types sized).
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Splits `text` into raw fragments and special tokens, with llama.cpp's semantics: special
  // tokens are tried longest first (ties: lower id first), each taking its leftmost
  // non-overlapping occurrences in the text that earlier tokens left unclaimed. With
  // parse_special=false only user-defined tokens are matched. A token with rstrip (Vocab::
  // rstrip_special) drops the ASCII whitespace right after it. Raw fragments are never empty.
  // Cost: O(text × longest match) to find occurrences, nothing more when there are none.
  void partition(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

  size_t num_special_tokens() const { return num_special_; }

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // (byte, node index)
    int32_t rank = -1;                                  // rank of the token ending here
  };
  struct Entry {
    TokenId id;
    uint32_t length;
    bool user_defined;
    bool rstrip;
  };
  int32_t child(int32_t node, uint8_t byte) const;

  std::vector<Node> nodes_;     // trie over special token texts; nodes_[0] is the root
  std::vector<int32_t> root_;   // 256 direct children of the root (-1 if none)
  std::vector<Entry> entries_;  // by rank: longest first
  size_t num_special_ = 0;
};

}  // namespace pagoda::tokenizer
