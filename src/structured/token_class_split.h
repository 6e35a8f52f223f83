// TokenClassSplit: a vocabulary split by a byte class C — the *pure* tokens (every byte in C),
// by length, and a trie over the *mixed* rest. A lexer state that C maps along a chain of
// live states (as a JSON string body's state maps its plain characters to itself) keeps
// every pure token short enough for the chain alive, so the token-set walk
// (lexer_token_sets.h) only walks the mixed trie, a fraction of the vocabulary.
#pragma once

#include <cstdint>
#include <vector>

#include "structured/token_table.h"

namespace pagoda::structured {

struct TokenClassSplit {
  ByteClass cls;
  std::vector<int32_t> pure;           // pure token ids, by length (shortest first)
  std::vector<uint32_t> pure_len_end;  // [max length + 1]: pure tokens with <= L bytes
  std::vector<uint64_t> pure_mask;     // every pure token (bit mask [num_mask_words])
  TokenTable::Trie mixed;              // the trie's other tokens
};

TokenClassSplit make_token_class_split(const TokenTable& table, const ByteClass& cls);

}  // namespace pagoda::structured
