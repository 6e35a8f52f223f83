// The ByteNfa contract (regex.h) as one check shared by the regex tests and fuzz_regex: starts
// sorted, distinct and in range; edges in range, lo <= hi and sorted by (lo, hi, target); no
// states when the language is empty; every state reachable from a start and able to reach an
// accepting state (trimmed).
#pragma once

#include <string>
#include <vector>

#include "structured/regex.h"

namespace pagoda::structured::test {

// "" if `nfa` keeps the contract, else what it breaks first.
inline std::string nfa_invariant_violation(const ByteNfa& nfa) {
  const size_t n = nfa.states.size();
  if (nfa.starts.empty())
    return n == 0 ? "" : "no start state but " + std::to_string(n) + " states";
  std::vector<char> reach(n, 0), coreach(n, 0);
  std::vector<int32_t> stack;
  for (size_t i = 0; i < nfa.starts.size(); ++i) {
    const int32_t s = nfa.starts[i];
    if (s < 0 || static_cast<size_t>(s) >= n) return "start " + std::to_string(s) + " out of range";
    if (i > 0 && nfa.starts[i - 1] >= s) return "starts not sorted and distinct";
    reach[static_cast<size_t>(s)] = 1;
    stack.push_back(s);
  }
  std::vector<std::vector<int32_t>> rev(n);
  for (size_t s = 0; s < n; ++s) {
    const auto& edges = nfa.states[s].edges;
    for (size_t k = 0; k < edges.size(); ++k) {
      const ByteNfa::Edge& e = edges[k];
      const std::string where = "state " + std::to_string(s) + " edge " + std::to_string(k);
      if (e.lo > e.hi) return where + ": lo > hi";
      if (e.target < 0 || static_cast<size_t>(e.target) >= n)
        return where + ": target out of range";
      if (k > 0) {
        const ByteNfa::Edge& p = edges[k - 1];
        if (!(p.lo < e.lo ||
              (p.lo == e.lo && (p.hi < e.hi || (p.hi == e.hi && p.target < e.target)))))
          return where + ": edges not sorted by (lo, hi, target)";
      }
      rev[static_cast<size_t>(e.target)].push_back(static_cast<int32_t>(s));
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
    if (!reach[s]) return "state " + std::to_string(s) + " is unreachable";
    if (!coreach[s]) return "state " + std::to_string(s) + " cannot reach an accepting state";
  }
  return "";
}

}  // namespace pagoda::structured::test
