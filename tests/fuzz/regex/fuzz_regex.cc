// Fuzzes compile_regex on arbitrary patterns: it either refuses with invalid_argument ("regex:
// ...") or returns a well-formed trimmed NFA (edges sorted and in range, every state reachable
// and able to accept, starts empty only with no states) that accepts only valid UTF-8; full_match
// agrees with an independent simulation, and every prefix of an accepted subject stays alive.
// A subject that is valid UTF-8 must match its own regex_escape.
// Input: the pattern, then optionally a NUL and a subject.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "structured/grammar.h"
#include "structured/regex.h"
#include "tokenizer/utf8.h"
#include "unit/structured/regex/nfa_invariants.h"

namespace {

using pagoda::StatusCode;
using pagoda::structured::ByteNfa;
using pagoda::structured::compile_regex;
using pagoda::structured::RegexLimits;

void check(bool ok) {
  if (!ok) std::abort();
}

// A plain set simulation (no reliance on edge order): whether `text` is accepted, and whether the
// state set stayed non-empty after every prefix.
struct Sim {
  bool accepted = false;
  bool alive_throughout = true;
};
Sim simulate(const ByteNfa& nfa, std::string_view text) {
  std::vector<char> cur(nfa.states.size(), 0), next(nfa.states.size(), 0);
  for (int32_t s : nfa.starts)
    cur[static_cast<size_t>(s)] = 1;
  Sim sim;
  for (char ch : text) {
    const auto b = static_cast<uint8_t>(ch);
    std::fill(next.begin(), next.end(), 0);
    bool any = false;
    for (size_t s = 0; s < cur.size(); ++s) {
      if (!cur[s]) continue;
      for (const ByteNfa::Edge& e : nfa.states[s].edges) {
        if (e.lo <= b && b <= e.hi) {
          next[static_cast<size_t>(e.target)] = 1;
          any = true;
        }
      }
    }
    cur.swap(next);
    if (!any) {
      sim.alive_throughout = false;
      return sim;
    }
  }
  for (size_t s = 0; s < cur.size(); ++s)
    sim.accepted = sim.accepted || (cur[s] && nfa.states[s].accepting);
  return sim;
}

// A string the NFA accepts, steered by `choices` (empty if the walk gives up).
std::string walk(const ByteNfa& nfa, std::string_view choices) {
  if (nfa.starts.empty()) return {};
  std::string out;
  int32_t s = nfa.starts[0];
  size_t i = 0;
  for (int steps = 0; steps < 64; ++steps) {
    const ByteNfa::State& st = nfa.states[static_cast<size_t>(s)];
    const uint8_t c = i < choices.size() ? static_cast<uint8_t>(choices[i++]) : 0;
    if (st.accepting && (st.edges.empty() || c % 4 == 0)) return out;
    if (st.edges.empty()) return {};
    const ByteNfa::Edge& e = st.edges[c % st.edges.size()];
    out += static_cast<char>(e.lo + (c / 4) % (e.hi - e.lo + 1));
    s = e.target;
  }
  return {};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view pattern = input.substr(0, nul);
  const std::string_view subject =
      nul == std::string_view::npos ? std::string_view() : input.substr(nul + 1);

  RegexLimits limits;
  limits.max_nfa_states = 1 << 14;  // keeps each run short; the limits themselves are exercised
  limits.max_nfa_edges = 1 << 16;
  auto nfa = compile_regex(pattern, limits);
  if (!nfa.ok()) {
    check(nfa.status().code() == StatusCode::kInvalidArgument);
    check(nfa.status().message().rfind("regex: ", 0) == 0);
  } else {
    check(pagoda::structured::test::nfa_invariant_violation(*nfa).empty());
    const Sim sim = simulate(*nfa, subject);
    check(nfa->full_match(subject) == sim.accepted);
    if (sim.accepted) {
      check(sim.alive_throughout);
      check(pagoda::tokenizer::utf8::is_valid(subject));
    }
    const std::string w = walk(*nfa, subject);
    if (!w.empty()) {
      check(nfa->full_match(w));
      check(pagoda::tokenizer::utf8::is_valid(w));
    }
  }
  if (subject.size() <= 512 && pagoda::tokenizer::utf8::is_valid(subject)) {
    auto literal = compile_regex(pagoda::structured::regex_escape(subject), limits);
    check(literal.ok());
    check(literal->full_match(subject));
  }
  return 0;
}
