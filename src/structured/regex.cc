// compile_regex: the AST (regex_parser.h) → a Thompson NFA over bytes with epsilon moves → an
// epsilon-free, trimmed ByteNfa.
//
// Each code point set becomes a small DAG of byte edges (utf8_ranges.h), built once per set with
// its suffixes shared ([80-BF] → exit is one state however many lead bytes need it) and copied
// wherever the set is used. Counted repetition copies its operand; x{n,m} is x^n followed by
// nested optionals (x(x(x)?)?)?, so each copy can skip only to the end and epsilon closures stay
// short. The sizes are estimated from the AST before anything is built, so a hostile
// `(a{1000}){1000}` is refused by the limit without allocating.
//
// Epsilon elimination keeps the start state and the targets of byte edges ("after a byte"
// states); each gets the byte edges of its epsilon closure and accepts if the closure holds the
// accepting state. Trimming then drops states that cannot reach an accepting state, and states
// with identical edges and acceptance are merged (a few rounds).
#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "base/checked_math.h"
#include "structured/byte_nfa_passes.h"
#include "structured/regex.h"
#include "structured/regex_parser.h"
#include "structured/utf8_ranges.h"

namespace pagoda::structured {

namespace {

// The byte-edge DAG of one code point set: state 0 is its entry, state 1 its exit.
struct SetNfa {
  struct Edge {
    int32_t from = 0;
    uint8_t lo = 0, hi = 0;
    int32_t to = 0;
  };
  int32_t num_states = 2;
  std::vector<Edge> edges;
};

SetNfa build_set_nfa(const std::vector<CodePointRange>& ranges) {
  std::vector<Utf8Sequence> seqs;
  for (const CodePointRange& r : ranges)
    append_utf8_sequences(r.lo, r.hi, seqs);
  SetNfa out;
  // Shared suffixes: the state whose one edge is (lo, hi) → target. A linear search while
  // small, a hash map for large sets (a class listing thousands of characters).
  std::vector<std::pair<uint64_t, int32_t>> small;
  std::unordered_map<uint64_t, int32_t> large;
  const bool use_map = seqs.size() > 16;
  auto suffix_state = [&](uint8_t lo, uint8_t hi, int32_t target) {
    const uint64_t key = uint64_t{lo} | (uint64_t{hi} << 8) | (uint64_t(target) << 16);
    if (use_map) {
      auto [it, inserted] = large.try_emplace(key, out.num_states);
      if (!inserted) return it->second;
    } else {
      for (const auto& [k, s] : small)
        if (k == key) return s;
      small.emplace_back(key, out.num_states);
    }
    out.edges.push_back({out.num_states, lo, hi, target});
    return out.num_states++;
  };
  for (const Utf8Sequence& seq : seqs) {
    int32_t target = 1;
    for (int i = seq.len - 1; i >= 1; --i)
      target = suffix_state(seq.bytes[i].lo, seq.bytes[i].hi, target);
    out.edges.push_back({0, seq.bytes[0].lo, seq.bytes[0].hi, target});
  }
  return out;
}

// Saturating arithmetic for the size estimates (far above any limit, never wrapping).
constexpr uint64_t kSaturated = uint64_t{1} << 62;
uint64_t sat_add(uint64_t a, uint64_t b) {
  const auto s = checked_add(a, b);
  return s && *s < kSaturated ? *s : kSaturated;
}
uint64_t sat_mul(uint64_t a, uint64_t b) {
  const auto p = checked_mul(a, b);
  return p && *p < kSaturated ? *p : kSaturated;
}

// The epsilon NFA: byte edges and epsilon edges as flat lists, bucketed by source later.
class ThompsonBuilder {
 public:
  struct ByteEdge {
    int32_t from = 0;
    uint8_t lo = 0, hi = 0;
    int32_t to = 0;
  };
  struct Frag {
    int32_t start = 0, end = 0;
  };

  ThompsonBuilder(const RegexAst& ast, const std::vector<SetNfa>& sets,
                  const std::vector<char>& nullable)
      : ast_(ast), sets_(sets), nullable_(nullable) {}

  Frag build(int32_t id) {
    const RegexNode& n = ast_.nodes[static_cast<size_t>(id)];
    switch (n.kind) {
      case RegexNode::Kind::kEmpty: {
        const int32_t s = new_state();
        return {s, s};
      }
      case RegexNode::Kind::kSet: {
        const SetNfa& set = sets_[static_cast<size_t>(id)];
        const int32_t base = num_states_;
        num_states_ += set.num_states;
        for (const SetNfa::Edge& e : set.edges)
          bytes_.push_back({base + e.from, e.lo, e.hi, base + e.to});
        return {base, base + 1};
      }
      case RegexNode::Kind::kConcat: {
        Frag whole = build(n.children[0]);
        for (size_t i = 1; i < n.children.size(); ++i) {
          const Frag f = build(n.children[i]);
          eps_.emplace_back(whole.end, f.start);
          whole.end = f.end;
        }
        return whole;
      }
      case RegexNode::Kind::kAlt: {
        const int32_t s = new_state(), e = new_state();
        for (int32_t child : n.children) {
          const Frag f = build(child);
          eps_.emplace_back(s, f.start);
          eps_.emplace_back(f.end, e);
        }
        return {s, e};
      }
      case RegexNode::Kind::kRepeat:
        return build_repeat(n);
    }
    return {};
  }

  int32_t num_states() const { return num_states_; }
  const std::vector<ByteEdge>& bytes() const { return bytes_; }
  const std::vector<std::pair<int32_t, int32_t>>& eps() const { return eps_; }

 private:
  int32_t new_state() { return num_states_++; }

  Frag build_repeat(const RegexNode& n) {
    const int32_t child = n.children[0];
    if (n.max == 0) {
      const int32_t s = new_state();
      return {s, s};
    }
    if (nullable_[static_cast<size_t>(child)]) {
      // x{n,m} = (x minus "")*{0,m} when x matches "": copies that must consume a byte keep the
      // epsilon closures short ((a?){n} would otherwise need ~n²/2 transitions).
      const int32_t s = new_state();
      if (n.max < 0) {
        const Frag f = build_nonempty(child);
        eps_.emplace_back(s, f.start);
        eps_.emplace_back(f.end, s);
        return {s, s};
      }
      const int32_t exit = new_state();
      int32_t cur = s;
      for (int32_t i = 0; i < n.max; ++i) {
        const Frag f = build_nonempty(child);
        eps_.emplace_back(cur, exit);
        eps_.emplace_back(cur, f.start);
        cur = f.end;
      }
      eps_.emplace_back(cur, exit);
      return {s, exit};
    }
    if (n.min == 0 && n.max < 0) {  // x*
      const int32_t s = new_state();
      const Frag f = build(child);
      eps_.emplace_back(s, f.start);
      eps_.emplace_back(f.end, s);
      return {s, s};
    }
    Frag whole{-1, -1};
    for (int32_t i = 0; i < n.min; ++i) {
      const Frag f = build(child);
      if (whole.start < 0) {
        whole = f;
      } else {
        eps_.emplace_back(whole.end, f.start);
        whole.end = f.end;
      }
      if (n.max < 0 && i + 1 == n.min) eps_.emplace_back(f.end, f.start);  // x{n,} = x{n-1}x+
    }
    if (n.max < 0 || n.max == n.min) return whole;
    // The optional tail (x(x(x)?)?)?: from the end of each copy, go on or skip to the exit.
    int32_t cur = whole.start < 0 ? new_state() : whole.end;
    if (whole.start < 0) whole.start = cur;
    const int32_t exit = new_state();
    for (int32_t i = n.min; i < n.max; ++i) {
      const Frag f = build(child);
      eps_.emplace_back(cur, exit);
      eps_.emplace_back(cur, f.start);
      cur = f.end;
    }
    eps_.emplace_back(cur, exit);
    whole.end = exit;
    return whole;
  }

  // Builds `id` and gives it a fresh entry state that has the byte edges of the old entry's
  // epsilon closure and no epsilon edges: the fragment then matches its language minus "".
  // (The fragment's states and edges are the ones appended since the call began.)
  Frag build_nonempty(int32_t id) {
    const int32_t s0 = num_states_;
    const size_t b0 = bytes_.size(), e0 = eps_.size();
    const Frag f = build(id);
    const auto n = static_cast<size_t>(num_states_ - s0);
    // The fragment's epsilon edges by source (CSR), then a DFS from its entry.
    off_.assign(n + 1, 0);
    for (size_t k = e0; k < eps_.size(); ++k)
      ++off_[static_cast<size_t>(eps_[k].first - s0) + 1];
    for (size_t i = 0; i < n; ++i)
      off_[i + 1] += off_[i];
    adj_.resize(eps_.size() - e0);
    fill_.assign(off_.begin(), off_.end() - 1);
    for (size_t k = e0; k < eps_.size(); ++k)
      adj_[static_cast<size_t>(fill_[static_cast<size_t>(eps_[k].first - s0)]++)] =
          eps_[k].second - s0;
    mark_.assign(n, 0);
    stack_.assign(1, f.start - s0);
    mark_[static_cast<size_t>(f.start - s0)] = 1;
    while (!stack_.empty()) {
      const auto u = static_cast<size_t>(stack_.back());
      stack_.pop_back();
      for (int32_t k = off_[u]; k < off_[u + 1]; ++k) {
        const auto v = static_cast<size_t>(adj_[static_cast<size_t>(k)]);
        if (!mark_[v]) {
          mark_[v] = 1;
          stack_.push_back(static_cast<int32_t>(v));
        }
      }
    }
    const int32_t entry = new_state();
    const size_t b1 = bytes_.size();
    for (size_t k = b0; k < b1; ++k) {
      const ByteEdge e = bytes_[k];
      if (mark_[static_cast<size_t>(e.from - s0)]) bytes_.push_back({entry, e.lo, e.hi, e.to});
    }
    return {entry, f.end};
  }

  const RegexAst& ast_;
  const std::vector<SetNfa>& sets_;
  const std::vector<char>& nullable_;
  std::vector<int32_t> off_, adj_, fill_, stack_;  // build_nonempty's scratch
  std::vector<char> mark_;
  int32_t num_states_ = 0;
  std::vector<ByteEdge> bytes_;
  std::vector<std::pair<int32_t, int32_t>> eps_;
};

// Upper bounds of the states and edges ThompsonBuilder makes for each node, bottom-up (children
// come first in the AST). Refuses the first node whose bound passes a limit, naming its offset.
Status check_sizes(const RegexAst& ast, const std::vector<SetNfa>& sets,
                   const std::vector<char>& nullable, const RegexLimits& limits) {
  std::vector<uint64_t> states(ast.nodes.size()), edges(ast.nodes.size());
  for (size_t i = 0; i < ast.nodes.size(); ++i) {
    const RegexNode& n = ast.nodes[i];
    uint64_t s = 0, e = 0;
    switch (n.kind) {
      case RegexNode::Kind::kEmpty:
        s = 1;
        break;
      case RegexNode::Kind::kSet:
        s = static_cast<uint64_t>(sets[i].num_states);
        e = sets[i].edges.size();
        break;
      case RegexNode::Kind::kConcat:
      case RegexNode::Kind::kAlt:
        for (int32_t c : n.children) {
          s = sat_add(s, states[static_cast<size_t>(c)]);
          e = sat_add(e, sat_add(edges[static_cast<size_t>(c)], 2));
        }
        s = sat_add(s, 2);
        break;
      case RegexNode::Kind::kRepeat: {
        const size_t c = static_cast<size_t>(n.children[0]);
        const uint64_t copies = static_cast<uint64_t>(n.max > 0 ? n.max : std::max(n.min, 1));
        // A nullable operand's copies get a new entry with up to all its byte edges again.
        const uint64_t per_copy_states = nullable[c] ? sat_add(states[c], 1) : states[c];
        const uint64_t per_copy_edges =
            nullable[c] ? sat_add(sat_mul(edges[c], 2), 2) : sat_add(edges[c], 2);
        s = sat_add(sat_mul(copies, per_copy_states), 2);
        e = sat_add(sat_mul(copies, per_copy_edges), 2);
        break;
      }
    }
    if (s > limits.max_nfa_states) {
      return invalid_argument(
          "regex: too many states: the part at offset {} needs about {} "
          "(limit {})",
          n.offset, s == kSaturated ? std::string("2^62") : std::to_string(s),
          limits.max_nfa_states);
    }
    if (e > limits.max_nfa_edges) {
      return invalid_argument(
          "regex: too many transitions: the part at offset {} needs about {} "
          "(limit {})",
          n.offset, e == kSaturated ? std::string("2^62") : std::to_string(e),
          limits.max_nfa_edges);
    }
    states[i] = s;
    edges[i] = e;
  }
  return Status();
}

// Counting sort of (from, payload) pairs into CSR form: offsets[s]..offsets[s+1] index `out`.
template <typename T, typename FromFn>
void bucket(const std::vector<T>& items, int32_t num_states, FromFn from,
            std::vector<int32_t>& offsets, std::vector<T>& out) {
  offsets.assign(static_cast<size_t>(num_states) + 1, 0);
  for (const T& item : items)
    ++offsets[static_cast<size_t>(from(item)) + 1];
  for (size_t s = 0; s < static_cast<size_t>(num_states); ++s)
    offsets[s + 1] += offsets[s];
  out.resize(items.size());
  std::vector<int32_t> fill(offsets.begin(), offsets.end() - 1);
  for (const T& item : items)
    out[static_cast<size_t>(fill[static_cast<size_t>(from(item))]++)] = item;
}

// Epsilon elimination from `start`: the states reachable through byte edges, renumbered in
// discovery order (the start is 0).
Result<ByteNfa> remove_epsilons(const ThompsonBuilder& b, int32_t start, int32_t accept,
                                const RegexLimits& limits) {
  const int32_t n = b.num_states();
  std::vector<int32_t> byte_off, eps_off;
  std::vector<ThompsonBuilder::ByteEdge> bytes;
  std::vector<std::pair<int32_t, int32_t>> eps;
  bucket(
      b.bytes(), n, [](const ThompsonBuilder::ByteEdge& e) { return e.from; }, byte_off, bytes);
  bucket(
      b.eps(), n, [](const std::pair<int32_t, int32_t>& e) { return e.first; }, eps_off, eps);

  // Closure steps are bounded too: `a?` written out n times has short paths but long closures.
  const uint64_t max_work = sat_mul(limits.max_nfa_edges, 4);
  uint64_t work = 0, num_edges = 0;
  bool over = false;
  ByteNfa nfa;
  std::vector<int32_t> new_id(static_cast<size_t>(n), -1);
  std::vector<int32_t> order;  // old ids by new id
  std::vector<int32_t> seen(static_cast<size_t>(n), -1);
  std::vector<int32_t> stack;
  std::vector<ByteNfa::Edge> edges;  // the current state's, before normalizing
  new_id[static_cast<size_t>(start)] = 0;
  order.push_back(start);
  for (size_t next = 0; next < order.size(); ++next) {
    const int32_t id = static_cast<int32_t>(next);
    ByteNfa::State state;
    edges.clear();
    stack.assign(1, order[next]);
    seen[static_cast<size_t>(order[next])] = id;
    while (!stack.empty()) {
      const auto s = static_cast<size_t>(stack.back());
      stack.pop_back();
      if (static_cast<int32_t>(s) == accept) state.accepting = true;
      for (int32_t k = byte_off[s]; k < byte_off[s + 1]; ++k) {
        const ThompsonBuilder::ByteEdge& e = bytes[static_cast<size_t>(k)];
        int32_t& target = new_id[static_cast<size_t>(e.to)];
        if (target < 0) {
          target = static_cast<int32_t>(order.size());
          order.push_back(e.to);
        }
        edges.push_back({e.lo, e.hi, target});
      }
      for (int32_t k = eps_off[s]; k < eps_off[s + 1]; ++k) {
        const int32_t t = eps[static_cast<size_t>(k)].second;
        if (seen[static_cast<size_t>(t)] != id) {
          seen[static_cast<size_t>(t)] = id;
          stack.push_back(t);
        }
      }
      work += 1 + static_cast<uint64_t>(byte_off[s + 1] - byte_off[s]);
      if (work > max_work || edges.size() > limits.max_nfa_edges) {
        over = true;  // the closure is incomplete: refuse below
        break;
      }
    }
    normalize_edges(edges);
    num_edges += edges.size();
    if (over || num_edges > limits.max_nfa_edges) {
      return invalid_argument(
          "regex: too many transitions once empty moves are removed "
          "(limit {})",
          limits.max_nfa_edges);
    }
    state.edges.assign(edges.begin(), edges.end());  // one exact allocation per state
    nfa.states.push_back(std::move(state));
  }
  nfa.starts.push_back(0);
  return nfa;
}

}  // namespace

bool ByteNfa::full_match(std::string_view text) const {
  std::vector<int32_t> cur(starts.begin(), starts.end()), next;
  std::vector<size_t> stamp(states.size(), 0);
  size_t step = 0;
  for (char ch : text) {
    const auto byte = static_cast<uint8_t>(ch);
    ++step;
    next.clear();
    for (int32_t s : cur) {
      for (const Edge& e : states[static_cast<size_t>(s)].edges) {
        if (e.lo > byte) break;  // edges are sorted by lo
        if (byte <= e.hi && stamp[static_cast<size_t>(e.target)] != step) {
          stamp[static_cast<size_t>(e.target)] = step;
          next.push_back(e.target);
        }
      }
    }
    cur.swap(next);
    if (cur.empty()) return false;
  }
  for (int32_t s : cur)
    if (states[static_cast<size_t>(s)].accepting) return true;
  return false;
}

Result<ByteNfa> compile_regex(std::string_view pattern, const RegexLimits& requested) {
  // State ids and edge offsets are int32_t: larger limits act as 2^30.
  constexpr size_t kHardLimit = size_t{1} << 30;
  RegexLimits limits = requested;
  limits.max_nfa_states = std::min(limits.max_nfa_states, kHardLimit);
  limits.max_nfa_edges = std::min(limits.max_nfa_edges, kHardLimit);
  if (pattern.size() > limits.max_pattern_bytes) {
    return invalid_argument("regex: pattern of {} bytes is longer than the limit of {}",
                            pattern.size(), limits.max_pattern_bytes);
  }
  PAGODA_ASSIGN_OR_RETURN(RegexAst ast, parse_regex(pattern));
  std::vector<SetNfa> sets(ast.nodes.size());
  for (size_t i = 0; i < ast.nodes.size(); ++i) {
    if (ast.nodes[i].kind == RegexNode::Kind::kSet) sets[i] = build_set_nfa(ast.nodes[i].ranges);
  }
  // Whether each node matches "" (children come first).
  std::vector<char> nullable(ast.nodes.size(), 0);
  for (size_t i = 0; i < ast.nodes.size(); ++i) {
    const RegexNode& n = ast.nodes[i];
    const auto child = [&](size_t k) { return nullable[static_cast<size_t>(n.children[k])]; };
    switch (n.kind) {
      case RegexNode::Kind::kEmpty:
        nullable[i] = 1;
        break;
      case RegexNode::Kind::kSet:
        break;
      case RegexNode::Kind::kConcat:
        nullable[i] = 1;
        for (size_t k = 0; k < n.children.size(); ++k)
          nullable[i] = nullable[i] && child(k);
        break;
      case RegexNode::Kind::kAlt:
        for (size_t k = 0; k < n.children.size(); ++k)
          nullable[i] = nullable[i] || child(k);
        break;
      case RegexNode::Kind::kRepeat:
        nullable[i] = n.min == 0 || child(0);
        break;
    }
  }
  PAGODA_RETURN_IF_ERROR(check_sizes(ast, sets, nullable, limits));
  ThompsonBuilder builder(ast, sets, nullable);
  const ThompsonBuilder::Frag whole = builder.build(ast.root);
  PAGODA_ASSIGN_OR_RETURN(ByteNfa nfa, remove_epsilons(builder, whole.start, whole.end, limits));
  trim_nfa(nfa);
  merge_equivalent_states(nfa);
  return nfa;
}

}  // namespace pagoda::structured
