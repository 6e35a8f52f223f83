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
  auto sets = std::make_unique<LexerTokenSets>(compute_lexer_token_sets(*lexer_, *tokens_, state));
  token_set_bytes_ += sets->bytes();
  auto [pos, inserted] = token_sets_.emplace(state, std::move(sets));
  return *pos->second;
}

}  // namespace pagoda::structured
