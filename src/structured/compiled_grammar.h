// CompiledGrammar: a Grammar made ready to match — lexemes compiled to NFAs and joined in one
// lazy Lexer, the rules flattened into dotted positions for the Earley parser (parser.h), and,
// when bound to a TokenTable, the per-lexer-state token sets that make mask computation cheap.
//
// Compilation rewrites the grammar without changing its language: a lexeme that matches the
// empty string becomes a rule ("" | the lexeme without it), so every lexeme consumes a byte;
// rules and alternatives that can derive no text are dropped (so every state the parser reaches
// can still be completed, which is what lets a live lexer state alone prove a token allowed).
//
// Shared by every Matcher of the same constraint; its lazily filled tables are guarded by
// mutex(), which a Matcher holds while it works.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "structured/grammar.h"
#include "structured/lexer.h"
#include "structured/lexer_token_sets.h"
#include "structured/token_table.h"

namespace pagoda::structured {

// A dotted position: index into the flattened alternatives. dot_symbol(pos) is what follows the
// dot: a rule id (>= 0), a lexeme (encoded ~lexeme, < 0 and != kEnd), or kEnd.
inline constexpr int32_t kEnd = INT32_MIN;
inline constexpr int32_t encode_lexeme(int32_t lexeme) {
  return ~lexeme;
}
inline constexpr int32_t decode_lexeme(int32_t symbol) {
  return ~symbol;
}
inline constexpr bool is_lexeme_symbol(int32_t symbol) {
  return symbol < 0 && symbol != kEnd;
}

class CompiledGrammar {
 public:
  // `tokens` may be null (byte-level recognition only: no masks).
  static Result<std::shared_ptr<CompiledGrammar>> compile(const Grammar& grammar,
                                                          std::shared_ptr<const TokenTable> tokens);

  int32_t start_rule() const { return start_; }
  int32_t dot_symbol(int32_t pos) const { return dot_symbol_[static_cast<size_t>(pos)]; }
  int32_t lhs(int32_t pos) const { return lhs_[static_cast<size_t>(pos)]; }
  const std::vector<int32_t>& alternatives(int32_t rule) const {
    return rule_alts_[static_cast<size_t>(rule)];
  }
  bool nullable(int32_t rule) const { return nullable_[static_cast<size_t>(rule)] != 0; }
  size_t num_positions() const { return dot_symbol_.size(); }
  size_t num_rules() const { return rule_alts_.size(); }

  const TokenTable* tokens() const { return tokens_.get(); }
  std::mutex& mutex() const { return mutex_; }
  // The following mutate lazily built tables: call with mutex() held.
  Lexer& lexer() const { return *lexer_; }
  const LexerTokenSets& token_sets(LexerState state) const;

 private:
  CompiledGrammar() = default;

  int32_t start_ = 0;
  std::vector<int32_t> dot_symbol_, lhs_;
  std::vector<std::vector<int32_t>> rule_alts_;
  std::vector<uint8_t> nullable_;
  std::shared_ptr<const TokenTable> tokens_;
  mutable std::mutex mutex_;
  std::unique_ptr<Lexer> lexer_;
  mutable std::unordered_map<LexerState, std::unique_ptr<LexerTokenSets>> token_sets_;
  mutable size_t token_set_bytes_ = 0;
};

}  // namespace pagoda::structured
