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
  const size_t n = nfa.states.size();
  if (nfa.starts.empty()) {
    EXPECT_EQ(n, 0u) << pattern;
    return;
  }
  std::vector<char> reach(n, 0), coreach(n, 0);
  std::vector<int32_t> stack;
  for (size_t i = 0; i < nfa.starts.size(); ++i) {
    ASSERT_GE(nfa.starts[i], 0);
    ASSERT_LT(static_cast<size_t>(nfa.starts[i]), n);
    if (i > 0) {
      EXPECT_LT(nfa.starts[i - 1], nfa.starts[i]);
    }
    reach[static_cast<size_t>(nfa.starts[i])] = 1;
    stack.push_back(nfa.starts[i]);
  }
  std::vector<std::vector<int32_t>> rev(n);
  for (size_t s = 0; s < n; ++s) {
    const auto& edges = nfa.states[s].edges;
    for (size_t k = 0; k < edges.size(); ++k) {
      const ByteNfa::Edge& e = edges[k];
      ASSERT_LE(e.lo, e.hi) << pattern;
      ASSERT_GE(e.target, 0);
      ASSERT_LT(static_cast<size_t>(e.target), n);
      rev[static_cast<size_t>(e.target)].push_back(static_cast<int32_t>(s));
      if (k > 0) {
        const ByteNfa::Edge& p = edges[k - 1];
        EXPECT_TRUE(p.lo < e.lo ||
                    (p.lo == e.lo && (p.hi < e.hi || (p.hi == e.hi && p.target < e.target))))
            << pattern << " state " << s;
      }
    }
  }
  while (!stack.empty()) {
    const auto s = static_cast<size_t>(stack.back());
    stack.pop_back();
    for (const ByteNfa::Edge& e : nfa.states[s].edges) {
      if (!reach[static_cast<size_t>(e.target)]) {
        reach[static_cast<size_t>(e.target)] = 1;
        stack.push_back(e.target);
      }
    }
  }
  for (size_t s = 0; s < n; ++s) {
    if (nfa.states[s].accepting) {
      coreach[s] = 1;
      stack.push_back(static_cast<int32_t>(s));
    }
  }
  while (!stack.empty()) {
    const auto s = static_cast<size_t>(stack.back());
    stack.pop_back();
    for (int32_t p : rev[s]) {
      if (!coreach[static_cast<size_t>(p)]) {
        coreach[static_cast<size_t>(p)] = 1;
        stack.push_back(p);
      }
    }
  }
  for (size_t s = 0; s < n; ++s) {
    EXPECT_TRUE(reach[s]) << pattern << ": state " << s << " is unreachable";
    EXPECT_TRUE(coreach[s]) << pattern << ": state " << s << " cannot reach an accepting state";
  }
}

}  // namespace pagoda::structured::test
