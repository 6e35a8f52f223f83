#include "structured/byte_nfa_passes.h"

#include <algorithm>
#include <cstdint>
#include <utility>

namespace pagoda::structured {

void normalize_edges(std::vector<ByteNfa::Edge>& edges) {
  if (edges.size() < 2) return;
  std::sort(edges.begin(), edges.end(), [](const ByteNfa::Edge& a, const ByteNfa::Edge& b) {
    return a.target != b.target ? a.target < b.target : a.lo != b.lo ? a.lo < b.lo : a.hi < b.hi;
  });
  size_t n = 0;
  for (size_t i = 1; i < edges.size(); ++i) {
    ByteNfa::Edge& last = edges[n];
    const ByteNfa::Edge& e = edges[i];
    if (e.target == last.target && e.lo <= last.hi + 1) {
      last.hi = std::max(last.hi, e.hi);
    } else {
      edges[++n] = e;
    }
  }
  edges.resize(n + 1);
  std::sort(edges.begin(), edges.end(), [](const ByteNfa::Edge& a, const ByteNfa::Edge& b) {
    return a.lo != b.lo ? a.lo < b.lo : a.hi != b.hi ? a.hi < b.hi : a.target < b.target;
  });
}

void trim_nfa(ByteNfa& nfa) {
  const size_t n = nfa.states.size();
  std::vector<int32_t> rev_off(n + 1, 0), rev;
  for (const ByteNfa::State& s : nfa.states)
    for (const ByteNfa::Edge& e : s.edges)
      ++rev_off[static_cast<size_t>(e.target) + 1];
  for (size_t s = 0; s < n; ++s)
    rev_off[s + 1] += rev_off[s];
  rev.resize(static_cast<size_t>(rev_off[n]));
  std::vector<int32_t> fill(rev_off.begin(), rev_off.end() - 1);
  for (size_t s = 0; s < n; ++s)
    for (const ByteNfa::Edge& e : nfa.states[s].edges)
      rev[static_cast<size_t>(fill[static_cast<size_t>(e.target)]++)] = static_cast<int32_t>(s);

  std::vector<char> live(n, 0);
  std::vector<int32_t> stack;
  for (size_t s = 0; s < n; ++s) {
    if (nfa.states[s].accepting) {
      live[s] = 1;
      stack.push_back(static_cast<int32_t>(s));
    }
  }
  while (!stack.empty()) {
    const auto s = static_cast<size_t>(stack.back());
    stack.pop_back();
    for (int32_t k = rev_off[s]; k < rev_off[s + 1]; ++k) {
      const auto p = static_cast<size_t>(rev[static_cast<size_t>(k)]);
      if (!live[p]) {
        live[p] = 1;
        stack.push_back(static_cast<int32_t>(p));
      }
    }
  }
  if (n == 0 || !live[0]) {
    nfa.states.clear();
    nfa.starts.clear();
    return;
  }
  std::vector<int32_t> new_id(n, -1);
  int32_t next = 0;
  for (size_t s = 0; s < n; ++s)
    if (live[s]) new_id[s] = next++;
  if (static_cast<size_t>(next) == n) return;
  std::vector<ByteNfa::State> kept;
  kept.reserve(static_cast<size_t>(next));
  for (size_t s = 0; s < n; ++s) {
    if (!live[s]) continue;
    ByteNfa::State& st = nfa.states[s];
    std::erase_if(st.edges,
                  [&](const ByteNfa::Edge& e) { return !live[static_cast<size_t>(e.target)]; });
    for (ByteNfa::Edge& e : st.edges)
      e.target = new_id[static_cast<size_t>(e.target)];
    kept.push_back(std::move(st));
  }
  nfa.states = std::move(kept);
  nfa.starts.assign(1, 0);
}

// What merges in practice: the ends of alternatives, the exits of sets used side by side.
// States are found through a hash table of their edges and compared in full on a hash match.
void merge_equivalent_states(ByteNfa& nfa) {
  constexpr int kMaxRounds = 8;
  const auto same = [&nfa](int32_t a, int32_t b) {
    const ByteNfa::State& x = nfa.states[static_cast<size_t>(a)];
    const ByteNfa::State& y = nfa.states[static_cast<size_t>(b)];
    if (x.accepting != y.accepting || x.edges.size() != y.edges.size()) return false;
    for (size_t k = 0; k < x.edges.size(); ++k) {
      const ByteNfa::Edge &e = x.edges[k], &f = y.edges[k];
      if (e.lo != f.lo || e.hi != f.hi || e.target != f.target) return false;
    }
    return true;
  };
  const auto hash = [](const ByteNfa::State& st) {
    uint64_t h = st.accepting ? 0x51ED27 : 0x2545F491;
    for (const ByteNfa::Edge& e : st.edges) {
      const uint64_t v = uint64_t{e.lo} | (uint64_t{e.hi} << 8) |
                         (uint64_t{static_cast<uint32_t>(e.target)} << 16);
      h = (h ^ v) * 0x9E3779B97F4A7C15ull;
      h ^= h >> 29;
    }
    return h;
  };
  std::vector<uint64_t> hashes;
  std::vector<int32_t> table, rep, new_id;  // table: open addressing by hash, -1 = empty
  for (int round = 0; round < kMaxRounds && nfa.states.size() > 1; ++round) {
    const size_t n = nfa.states.size();
    size_t capacity = 16;
    while (capacity < 2 * n)
      capacity *= 2;
    table.assign(capacity, -1);
    hashes.resize(n);
    rep.resize(n);
    bool merged = false;
    for (size_t s = 0; s < n; ++s) {  // in id order, so the lowest id represents its class
      const uint64_t h = hash(nfa.states[s]);
      hashes[s] = h;
      rep[s] = static_cast<int32_t>(s);
      for (size_t slot = h & (capacity - 1);; slot = (slot + 1) & (capacity - 1)) {
        const int32_t t = table[slot];
        if (t < 0) {
          table[slot] = static_cast<int32_t>(s);
          break;
        }
        if (hashes[static_cast<size_t>(t)] == h && same(t, static_cast<int32_t>(s))) {
          rep[s] = t;
          merged = true;
          break;
        }
      }
    }
    if (!merged) return;
    new_id.assign(n, -1);
    int32_t next = 0;
    for (size_t s = 0; s < n; ++s)
      if (rep[s] == static_cast<int32_t>(s)) new_id[s] = next++;
    std::vector<ByteNfa::State> kept;
    kept.reserve(static_cast<size_t>(next));
    for (size_t s = 0; s < n; ++s) {
      if (rep[s] != static_cast<int32_t>(s)) continue;
      ByteNfa::State& st = nfa.states[s];
      for (ByteNfa::Edge& e : st.edges)
        e.target = new_id[static_cast<size_t>(rep[static_cast<size_t>(e.target)])];
      normalize_edges(st.edges);
      kept.push_back(std::move(st));
    }
    nfa.states = std::move(kept);
    for (int32_t& s : nfa.starts)
      s = new_id[static_cast<size_t>(rep[static_cast<size_t>(s)])];
  }
}

}  // namespace pagoda::structured
