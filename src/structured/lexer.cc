#include "structured/lexer.h"

#include <algorithm>

namespace pagoda::structured {

Lexer::Lexer(std::vector<ByteNfa> lexemes) {
  for (size_t l = 0; l < lexemes.size(); ++l) {
    const auto base = static_cast<int32_t>(nfa_.size());
    std::vector<int32_t> starts;
    for (int32_t s : lexemes[l].starts)
      starts.push_back(base + s);
    lexeme_start_.push_back(std::move(starts));
    for (ByteNfa::State& state : lexemes[l].states) {
      for (ByteNfa::Edge& e : state.edges)
        e.target += base;
      nfa_.push_back(std::move(state));
      owner_.push_back(static_cast<int32_t>(l));
    }
  }
  std::vector<int32_t> empty;
  intern(empty);  // state 0: dead
}

LexerState Lexer::intern(std::vector<int32_t>& set) {
  std::sort(set.begin(), set.end());
  set.erase(std::unique(set.begin(), set.end()), set.end());
  auto it = set_to_state_.find(set);
  if (it != set_to_state_.end()) return it->second;
  if (states_.size() >= kMaxStates) {
    full_ = true;
    return kDeadLexerState;
  }
  StateInfo info;
  info.set_begin = static_cast<uint32_t>(sets_.size());
  sets_.insert(sets_.end(), set.begin(), set.end());
  info.set_end = static_cast<uint32_t>(sets_.size());
  info.accept_begin = static_cast<uint32_t>(accepting_.size());
  for (int32_t g : set) {
    if (!nfa_[static_cast<size_t>(g)].accepting) continue;
    const int32_t lexeme = owner_[static_cast<size_t>(g)];
    if (accepting_.size() == info.accept_begin || accepting_.back() != lexeme)
      accepting_.push_back(lexeme);
  }
  // Owners of a sorted global-state set are sorted too (lexemes occupy consecutive ranges).
  info.accept_end = static_cast<uint32_t>(accepting_.size());
  const auto id = static_cast<LexerState>(states_.size());
  states_.push_back(info);
  transitions_.resize(transitions_.size() + 256, -1);
  if (id == kDeadLexerState) std::fill(transitions_.begin(), transitions_.begin() + 256, 0);
  set_to_state_.emplace(set, id);
  return id;
}

LexerState Lexer::start(std::span<const int32_t> allowed) {
  std::vector<int32_t> set;
  for (int32_t lexeme : allowed) {
    const auto& s = lexeme_start_[static_cast<size_t>(lexeme)];
    set.insert(set.end(), s.begin(), s.end());
  }
  return intern(set);
}

LexerState Lexer::compute_next(LexerState state, uint8_t byte) {
  scratch_.clear();
  const StateInfo info = states_[static_cast<size_t>(state)];
  for (uint32_t i = info.set_begin; i < info.set_end; ++i) {
    for (const ByteNfa::Edge& e : nfa_[static_cast<size_t>(sets_[i])].edges) {
      if (byte >= e.lo && byte <= e.hi) scratch_.push_back(e.target);
    }
  }
  std::vector<int32_t> set = scratch_;
  return intern(set);
}

}  // namespace pagoda::structured
