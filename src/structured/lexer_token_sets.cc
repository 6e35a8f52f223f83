#include "structured/lexer_token_sets.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>

namespace pagoda::structured {
namespace {

void set_bit(std::vector<uint64_t>& mask, int32_t token) {
  mask[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
}

// Walks `trie` with the lexer alone from `state`: inside bits and roots into `sets`.
void walk_trie(Lexer& lex, const TokenTable::Trie& trie, LexerState state, LexerTokenSets& sets) {
  // frames[d]: the path's first d bytes (d = 0: none yet) — the lexer state after them, whether
  // it accepts, and the root (1 + trie node that follows the first accepting state on the path;
  // 0 = none yet) with the state before it.
  struct Frame {
    LexerState state = kDeadLexerState;
    bool accepts = false;
    uint32_t root = 0;
    LexerState root_state = kDeadLexerState;
  };
  std::vector<Frame> frames(2);
  frames[0] = Frame{state, !lex.accepting(state).empty(), 0, kDeadLexerState};
  const TokenTable::TrieNode* nodes = trie.nodes.data();
  const auto num_nodes = static_cast<uint32_t>(trie.nodes.size());
  const int32_t* by_node = trie.tokens_by_node.data();
  uint64_t* inside = sets.inside.data();
  uint32_t i = 1;
  while (i < num_nodes) {
    const TokenTable::TrieNode& node = nodes[i];
    const Frame& parent = frames[node.depth - 1];
    uint32_t r = parent.root;
    LexerState r_state = parent.root_state;
    if (r == 0 && parent.accepts) {
      // A lexeme may end before this byte: the tokens below that the lexer alone rejects go
      // to the parser.
      r = i + 1;
      r_state = parent.state;
    }
    const LexerState next = lex.next(parent.state, node.byte);
    if (next == kDeadLexerState) {
      // No lexeme goes on: every token below is rejected (no possible end on the path) or
      // left to the parser from this root.
      if (r != 0 && (sets.roots.empty() || sets.roots.back().node != r - 1))
        sets.roots.push_back({r - 1, r_state});
      i = node.subtree_end;
      continue;
    }
    for (uint32_t t = node.token_begin; t < node.token_end; ++t) {
      const int32_t token = by_node[t];
      inside[static_cast<size_t>(token) / 64] |= uint64_t{1} << (token % 64);
    }
    if (node.depth + 1u > frames.size()) frames.resize(node.depth + 1u);
    frames[node.depth] = Frame{next, !lex.accepting(next).empty(), r, r_state};
    ++i;
  }
}

// One token with the lexer alone: inside, left to the parser, or rejected.
void lex_token(Lexer& lex, std::string_view bytes, int32_t token, LexerState state,
               LexerTokenSets& sets) {
  LexerState s = state;
  size_t end_at = SIZE_MAX;  // bytes before the first possible lexeme end
  LexerState end_state = kDeadLexerState;
  for (size_t k = 0; k < bytes.size(); ++k) {
    if (end_at == SIZE_MAX && !lex.accepting(s).empty()) {
      end_at = k;
      end_state = s;
    }
    s = lex.next(s, static_cast<uint8_t>(bytes[k]));
    if (s == kDeadLexerState) {
      if (end_at <= UINT16_MAX)
        sets.boundary.push_back({token, static_cast<uint16_t>(end_at), end_state});
      return;
    }
  }
  set_bit(sets.inside, token);
}

// The byte class that `state` maps to its most common live target T, if large enough, and how
// many steps every class byte keeps the lexer on one live chain (T, then the common target of
// T on the class, ...): UINT32_MAX when the chain reaches a state that maps the class to itself.
bool class_chain(Lexer& lex, LexerState state, ByteClass& cls, uint32_t& steps) {
  std::array<LexerState, 256> next{};
  for (int b = 0; b < 256; ++b)
    next[static_cast<size_t>(b)] = lex.next(state, static_cast<uint8_t>(b));
  std::array<LexerState, 256> sorted = next;
  std::sort(sorted.begin(), sorted.end());
  LexerState target = kDeadLexerState;
  int best = 0;
  for (size_t i = 0; i < sorted.size();) {
    size_t j = i;
    while (j < sorted.size() && sorted[j] == sorted[i])
      ++j;
    if (sorted[i] != kDeadLexerState && static_cast<int>(j - i) > best) {
      best = static_cast<int>(j - i);
      target = sorted[i];
    }
    i = j;
  }
  if (best < kMinSplitClass) return false;
  cls = ByteClass{};
  int first = -1;
  for (int b = 0; b < 256; ++b) {
    if (next[static_cast<size_t>(b)] != target) continue;
    cls.add(static_cast<uint8_t>(b));
    if (first < 0) first = b;
  }
  steps = 1;
  LexerState cur = target;
  while (steps < kMaxClassChain) {
    const LexerState u = lex.next(cur, static_cast<uint8_t>(first));
    if (u == kDeadLexerState) break;
    bool uniform = true;
    for (int b = first + 1; b < 256 && uniform; ++b) {
      if (cls.has(static_cast<uint8_t>(b)) && lex.next(cur, static_cast<uint8_t>(b)) != u)
        uniform = false;
    }
    if (!uniform) break;
    if (u == cur) {
      steps = UINT32_MAX;
      break;
    }
    cur = u;
    ++steps;
  }
  return true;
}

}  // namespace

LexerTokenSets compute_lexer_token_sets(Lexer& lexer, const TokenTable& table, LexerState state) {
  LexerTokenSets sets;
  sets.inside.assign(table.num_mask_words(), 0);
  ByteClass cls;
  uint32_t steps = 0;
  auto walk_all = [&] {
    sets.split.reset();
    sets.trie = &table.full_trie();
    walk_trie(lexer, *sets.trie, state, sets);
    return sets;
  };
  if (state == kDeadLexerState || !class_chain(lexer, state, cls, steps) || steps < kMinClassChain)
    return walk_all();
  sets.split = table.split(cls);
  const TokenClassSplit& split = *sets.split;
  // Pure tokens of at most `steps` bytes stay on the chain: inside. Longer ones are lexed one
  // by one (and left to the parser one by one): where there are many, walk the whole trie.
  const size_t max_len = split.pure_len_end.size() - 1;
  if (steps < max_len && split.pure.size() - split.pure_len_end[steps] > kMaxLexedTokens)
    return walk_all();
  if (steps >= max_len) {
    for (size_t w = 0; w < sets.inside.size(); ++w)
      sets.inside[w] |= split.pure_mask[w];
  } else {
    const uint32_t short_end = split.pure_len_end[steps];
    for (uint32_t k = 0; k < short_end; ++k)
      set_bit(sets.inside, split.pure[k]);
    for (size_t k = short_end; k < split.pure.size(); ++k)
      lex_token(lexer, table.bytes(split.pure[k]), split.pure[k], state, sets);
  }
  sets.trie = &split.mixed;
  walk_trie(lexer, *sets.trie, state, sets);
  return sets;
}

}  // namespace pagoda::structured
