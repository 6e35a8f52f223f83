// Lexer: one lazily built DFA over the union of a grammar's lexemes (regex.h NFAs). A lexer state
// is a set of NFA states, each belonging to one lexeme, so a single table lookup per byte advances
// every lexeme the parser currently allows at once; the parser (parser.h) only runs where a lexeme
// may end. States and transitions are built on first use and kept (bounded by kMaxStates).
//
// State 0 is dead (no lexeme can still match). Not thread-safe: the owner (CompiledGrammar)
// serialises access.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "base/status.h"
#include "structured/regex.h"

namespace pagoda::structured {

using LexerState = int32_t;
inline constexpr LexerState kDeadLexerState = 0;

class Lexer {
 public:
  // Above this many states the lexer refuses to grow (next() then answers dead); a grammar that
  // needs more is pathological (each state costs 1 KiB of transitions).
  static constexpr size_t kMaxStates = 1 << 18;

  // precondition: no NFA accepts the empty string (CompiledGrammar rewrites such lexemes).
  explicit Lexer(std::vector<ByteNfa> lexemes);

  size_t num_lexemes() const { return lexeme_start_.size(); }
  // The state that starts every lexeme in `allowed` (sorted, distinct lexeme ids).
  LexerState start(std::span<const int32_t> allowed);
  LexerState next(LexerState state, uint8_t byte) {
    const size_t slot = static_cast<size_t>(state) * 256 + byte;
    if (transitions_[slot] >= 0) return transitions_[slot];
    const LexerState t = compute_next(state, byte);  // may grow transitions_
    transitions_[slot] = t;
    return t;
  }
  // Lexemes that have matched exactly the bytes consumed since the state's start (sorted).
  std::span<const int32_t> accepting(LexerState state) const {
    const auto& s = states_[static_cast<size_t>(state)];
    return {accepting_.data() + s.accept_begin, s.accept_end - s.accept_begin};
  }
  size_t num_states() const { return states_.size(); }
  bool full() const { return full_; }

 private:
  struct StateInfo {
    uint32_t set_begin = 0, set_end = 0;        // into sets_
    uint32_t accept_begin = 0, accept_end = 0;  // into accepting_
  };
  LexerState intern(std::vector<int32_t>& nfa_states);  // sorts and dedups its argument
  LexerState compute_next(LexerState state, uint8_t byte);

  // The lexemes' NFAs concatenated: global state g belongs to lexeme owner_[g].
  std::vector<ByteNfa::State> nfa_;
  std::vector<int32_t> owner_;
  std::vector<std::vector<int32_t>> lexeme_start_;  // global start states per lexeme
  std::vector<StateInfo> states_;
  std::vector<int32_t> sets_, accepting_;
  std::vector<int32_t> transitions_;  // [num_states * 256], -1 = not computed yet
  std::map<std::vector<int32_t>, LexerState> set_to_state_;
  std::vector<int32_t> scratch_;
  bool full_ = false;
};

}  // namespace pagoda::structured
