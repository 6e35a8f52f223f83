// Helpers shared by the regex tests: compile-or-fail, a set simulation that reports whether a
// prefix is still alive, and the well-formedness check (sorted edges, trimmed states).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "structured/regex.h"
#include "tokenizer/utf8.h"
#include "unit/structured/regex/nfa_invariants.h"

namespace pagoda::structured::test {

inline ByteNfa compile_ok(std::string_view pattern) {
  Result<ByteNfa> r = compile_regex(pattern);
  EXPECT_TRUE(r.ok()) << pattern << ": " << r.status().to_string();
  return r.ok() ? std::move(r).value() : ByteNfa{};
}

inline std::string cp_utf8(uint32_t cp) {
  std::string s;
  tokenizer::utf8::append(s, cp);
  return s;
}

// The states alive after `bytes` (a set simulation), for prefix checks.
struct Run {
  bool alive = false;      // some continuation may still match
  bool accepting = false;  // `bytes` itself matches
};
inline Run run(const ByteNfa& nfa, std::string_view bytes) {
  std::vector<int32_t> cur = nfa.starts, next;
  for (char ch : bytes) {
    const auto b = static_cast<uint8_t>(ch);
    next.clear();
    for (int32_t s : cur)
      for (const ByteNfa::Edge& e : nfa.states[static_cast<size_t>(s)].edges)
        if (e.lo <= b && b <= e.hi && std::find(next.begin(), next.end(), e.target) == next.end())
          next.push_back(e.target);
    cur.swap(next);
  }
  Run r;
  r.alive = !cur.empty();
  for (int32_t s : cur)
    r.accepting = r.accepting || nfa.states[static_cast<size_t>(s)].accepting;
  return r;
}

// Every state is reachable from a start and reaches an accepting state; edges are in range,
// sorted by (lo, hi, target) with lo <= hi; starts sorted and distinct.
inline void expect_well_formed(const ByteNfa& nfa, std::string_view pattern) {
  EXPECT_EQ(nfa_invariant_violation(nfa), "") << pattern;
}

}  // namespace pagoda::structured::test
