// LexerTokenSets: what a lexer state alone says about every token, computed once per state by
// walking the token trie with the lexer (no parser). Tokens whose bytes the state can consume
// without dying are `inside`: allowed for sure while a thread in that state is live, because
// every parser state can be completed. Tokens along whose bytes a lexeme may end (an accepting
// state on the way) and that the lexer alone then rejects are left to the parser: as trie
// subtrees (`roots`) or, rarely, one by one (`boundary`). Every other token is rejected.
//
// A state that maps a large byte class C along a chain of live states (a JSON string body maps
// its plain characters to itself) walks only the tokens with a byte outside C
// (token_class_split.h); the pure ones short enough for the chain are inside at once.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "structured/lexer.h"
#include "structured/token_class_split.h"
#include "structured/token_table.h"

namespace pagoda::structured {

struct LexerTokenSets {
  std::vector<uint64_t> inside;  // bit mask [num_mask_words]
  // A root is a node of `trie` whose byte follows the first possible lexeme end on its path,
  // so every token below it shares that end; `state` is the lexer state before the root's byte
  // (it accepts something). Only subtrees holding a token the lexer alone cannot decide are
  // listed (preorder, disjoint).
  struct Root {
    uint32_t node = 0;
    LexerState state = 0;
  };
  const TokenTable::Trie* trie = nullptr;        // the table's trie or split->mixed
  std::shared_ptr<const TokenClassSplit> split;  // keeps `trie` alive
  std::vector<Root> roots;
  struct Boundary {
    int32_t token = 0;
    uint16_t offset = 0;   // bytes consumed before the first possible lexeme end
    LexerState state = 0;  // the lexer state after those bytes (accepting something)
  };
  std::vector<Boundary> boundary;

  size_t bytes() const {
    return inside.size() * sizeof(uint64_t) + roots.size() * sizeof(Root) +
           boundary.size() * sizeof(Boundary);
  }
};

// A byte class needs this many bytes to be worth a split.
inline constexpr int kMinSplitClass = 32;
// Chain steps checked for a class; pure tokens longer than the chain are lexed one by one. A
// chain shorter than kMinClassChain, or one that leaves more than kMaxLexedTokens pure tokens
// to lex, walks the whole trie instead.
inline constexpr uint32_t kMaxClassChain = 16;
inline constexpr uint32_t kMinClassChain = 4;
inline constexpr size_t kMaxLexedTokens = 2048;

LexerTokenSets compute_lexer_token_sets(Lexer& lexer, const TokenTable& table, LexerState state);

}  // namespace pagoda::structured
