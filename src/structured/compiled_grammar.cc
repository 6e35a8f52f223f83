#include "structured/compiled_grammar.h"

#include <algorithm>

#include "structured/regex.h"

namespace pagoda::structured {
namespace {

// L without the empty string: accepting start states get non-accepting twins.
ByteNfa without_empty(ByteNfa nfa) {
  std::vector<int32_t> starts;
  for (int32_t s : nfa.starts) {
    const ByteNfa::State& state = nfa.states[static_cast<size_t>(s)];
    if (!state.accepting) {
      starts.push_back(s);
    } else if (!state.edges.empty()) {
      ByteNfa::State twin = state;
      twin.accepting = false;
      nfa.states.push_back(std::move(twin));
      starts.push_back(static_cast<int32_t>(nfa.states.size() - 1));
    }
  }
  nfa.starts = std::move(starts);
  return nfa;
}

bool accepts_empty(const ByteNfa& nfa) {
  return std::any_of(nfa.starts.begin(), nfa.starts.end(),
                     [&](int32_t s) { return nfa.states[static_cast<size_t>(s)].accepting; });
}

}  // namespace

Result<std::shared_ptr<CompiledGrammar>> CompiledGrammar::compile(
    const Grammar& input, std::shared_ptr<const TokenTable> tokens) {
  PAGODA_RETURN_IF_ERROR(input.validate());
  Grammar grammar = input;

  // Lexemes → NFAs; those matching "" are split into a rule ("" | L \ {""}).
  std::vector<ByteNfa> nfas;
  std::vector<int32_t> empty_rule(grammar.lexemes.size(), -1);
  std::vector<uint8_t> lexeme_productive(grammar.lexemes.size(), 1);
  for (size_t l = 0; l < grammar.lexemes.size(); ++l) {
    Result<ByteNfa> nfa = compile_regex(grammar.lexemes[l]);
    if (!nfa.ok()) {
      return invalid_argument("grammar lexeme /{}/: {}", grammar.lexemes[l].substr(0, 200),
                              nfa.status().message());
    }
    ByteNfa n = std::move(nfa).value();
    if (accepts_empty(n)) {
      n = without_empty(std::move(n));
      const auto rule = static_cast<int32_t>(grammar.rules.size());
      Rule r{"lexeme_" + std::to_string(l) + "_or_empty", {{}}};
      if (!n.empty_language())
        r.alternatives.push_back({Symbol{Symbol::Kind::kLexeme, static_cast<int32_t>(l)}});
      grammar.rules.push_back(std::move(r));
      empty_rule[l] = rule;
    }
    if (n.empty_language()) lexeme_productive[l] = 0;
    nfas.push_back(std::move(n));
  }
  // The split rules were appended after the input's rules; only they keep the lexeme itself.
  for (size_t r = 0; r < input.rules.size(); ++r) {
    for (auto& alt : grammar.rules[r].alternatives) {
      for (Symbol& s : alt) {
        if (s.kind == Symbol::Kind::kLexeme && empty_rule[static_cast<size_t>(s.id)] >= 0)
          s = Symbol{Symbol::Kind::kRule, empty_rule[static_cast<size_t>(s.id)]};
      }
    }
  }

  // Productive rules (derive some text), to a fixpoint; then drop what cannot derive text.
  const size_t num_rules = grammar.rules.size();
  std::vector<uint8_t> productive(num_rules, 0);
  auto symbol_productive = [&](const Symbol& s) {
    return s.kind == Symbol::Kind::kLexeme ? lexeme_productive[static_cast<size_t>(s.id)] != 0
                                           : productive[static_cast<size_t>(s.id)] != 0;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < num_rules; ++r) {
      if (productive[r]) continue;
      for (const auto& alt : grammar.rules[r].alternatives) {
        if (std::all_of(alt.begin(), alt.end(), symbol_productive)) {
          productive[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  if (!productive[static_cast<size_t>(grammar.start)])
    return invalid_argument("grammar: no text satisfies it (the start rule derives nothing)");
  for (Rule& rule : grammar.rules) {
    std::erase_if(rule.alternatives, [&](const std::vector<Symbol>& alt) {
      return !std::all_of(alt.begin(), alt.end(), symbol_productive);
    });
  }

  std::shared_ptr<CompiledGrammar> out(new CompiledGrammar());
  out->start_ = grammar.start;
  out->nullable_.assign(num_rules, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < num_rules; ++r) {
      if (out->nullable_[r]) continue;
      for (const auto& alt : grammar.rules[r].alternatives) {
        if (std::all_of(alt.begin(), alt.end(), [&](const Symbol& s) {
              return s.kind == Symbol::Kind::kRule && out->nullable_[static_cast<size_t>(s.id)];
            })) {
          out->nullable_[r] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  out->rule_alts_.resize(num_rules);
  for (size_t r = 0; r < num_rules; ++r) {
    for (const auto& alt : grammar.rules[r].alternatives) {
      out->rule_alts_[r].push_back(static_cast<int32_t>(out->dot_symbol_.size()));
      for (const Symbol& s : alt) {
        out->dot_symbol_.push_back(s.kind == Symbol::Kind::kRule ? s.id : encode_lexeme(s.id));
        out->lhs_.push_back(static_cast<int32_t>(r));
      }
      out->dot_symbol_.push_back(kEnd);
      out->lhs_.push_back(static_cast<int32_t>(r));
    }
  }
  out->lexer_ = std::make_unique<Lexer>(std::move(nfas));
  out->tokens_ = std::move(tokens);
  return out;
}

const LexerTokenSets& CompiledGrammar::token_sets(LexerState state) const {
  auto it = token_sets_.find(state);
  if (it != token_sets_.end()) return *it->second;
  // Bound the cache (each entry holds a vocabulary bit mask): start over when it grows large.
  if (token_set_bytes_ > (size_t{256} << 20)) {
    token_sets_.clear();
    token_set_bytes_ = 0;
  }
  auto sets = std::make_unique<LexerTokenSets>();
  const TokenTable& table = *tokens_;
  sets->inside.assign(table.num_mask_words(), 0);
  const auto& trie = table.trie();
  const auto& by_node = table.tokens_by_node();
  // Walk the trie with the lexer alone. frames[d]: the path's first d bytes (d = 0: none yet) —
  // the lexer state after them, whether it accepts, and the root (1 + trie node that follows
  // the first accepting state on the path; 0 = none yet) with the state before it.
  struct Frame {
    LexerState state = kDeadLexerState;
    bool accepts = false;
    uint32_t root = 0;
    LexerState root_state = kDeadLexerState;
  };
  Lexer& lex = *lexer_;
  std::vector<Frame> frames(2);
  frames[0] = Frame{state, !lex.accepting(state).empty(), 0, kDeadLexerState};
  const TokenTable::TrieNode* nodes = trie.data();
  const auto num_nodes = static_cast<uint32_t>(trie.size());
  uint64_t* inside = sets->inside.data();
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
      if (r != 0 && (sets->roots.empty() || sets->roots.back().node != r - 1))
        sets->roots.push_back({r - 1, r_state});
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
  token_set_bytes_ += sets->inside.size() * 8 + sets->roots.size() * sizeof(LexerTokenSets::Root);
  auto [pos, inserted] = token_sets_.emplace(state, std::move(sets));
  return *pos->second;
}

}  // namespace pagoda::structured
