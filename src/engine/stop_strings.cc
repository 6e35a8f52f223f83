// Aho-Corasick construction (trie, BFS failure links, longest-match links) and the streaming
// hold-back / cut logic (see stop_strings.h).
#include "engine/stop_strings.h"

#include <algorithm>
#include <deque>
#include <tuple>
#include <unordered_map>

#include "base/check.h"
#include "tokenizer/utf8.h"

namespace pagoda::engine {

Result<std::shared_ptr<const StopStringSet>> StopStringSet::create(
    std::vector<std::string> strings) {
  if (strings.size() > kMaxStrings) {
    return invalid_argument("stop_strings has {} entries; at most {} are supported", strings.size(),
                            kMaxStrings);
  }
  size_t total = 0;
  for (size_t i = 0; i < strings.size(); ++i) {
    if (strings[i].empty()) return invalid_argument("stop_strings[{}] is empty", i);
    // Text is valid UTF-8, so only a valid string can match, and a cut at its start or end then
    // falls on a character boundary.
    if (!tokenizer::utf8::is_valid(strings[i])) {
      return invalid_argument("stop_strings[{}] is not valid UTF-8", i);
    }
    total += strings[i].size();
    if (total > kMaxTotalBytes) {
      return invalid_argument("stop_strings total more than {} bytes (at stop_strings[{}])",
                              kMaxTotalBytes, i);
    }
  }
  std::shared_ptr<StopStringSet> set(new StopStringSet());
  set->strings_ = std::move(strings);

  // 1. The trie, with edges in a hash map while building.
  std::unordered_map<uint64_t, int32_t> trie;
  trie.reserve(total);
  std::vector<Node>& nodes = set->nodes_;
  nodes.reserve(total + 1);
  nodes.emplace_back();
  for (size_t i = 0; i < set->strings_.size(); ++i) {
    const std::string& s = set->strings_[i];
    set->max_length_ = std::max(set->max_length_, s.size());
    int32_t state = 0;
    for (const char ch : s) {
      const uint64_t key = static_cast<uint64_t>(state) << 8 | static_cast<uint8_t>(ch);
      const auto [it, inserted] = trie.try_emplace(key, static_cast<int32_t>(nodes.size()));
      if (inserted) {
        Node n;
        n.depth = nodes[static_cast<size_t>(state)].depth + 1;
        nodes.push_back(n);
      }
      state = it->second;
    }
    if (nodes[static_cast<size_t>(state)].match < 0) {
      nodes[static_cast<size_t>(state)].match = static_cast<int32_t>(i);
    }
  }

  // 2. Flatten the edges, grouped by source node and sorted by byte.
  std::vector<std::tuple<int32_t, uint8_t, int32_t>> flat;
  flat.reserve(trie.size());
  for (const auto& [key, to] : trie) {
    flat.emplace_back(static_cast<int32_t>(key >> 8), static_cast<uint8_t>(key & 0xff), to);
  }
  std::sort(flat.begin(), flat.end());
  set->edges_.reserve(flat.size());
  for (const auto& [from, byte, to] : flat) {
    Node& n = nodes[static_cast<size_t>(from)];
    if (n.num_edges == 0) n.edges_begin = static_cast<uint32_t>(set->edges_.size());
    ++n.num_edges;
    set->edges_.push_back(Edge{byte, to});
  }

  // 3. Failure links in BFS order; match = own string, else the failure target's (a node's own
  // string is longer than any proper suffix, so this keeps the longest).
  std::deque<int32_t> queue;
  queue.push_back(0);
  while (!queue.empty()) {
    const int32_t u = queue.front();
    queue.pop_front();
    const Node un = nodes[static_cast<size_t>(u)];
    for (uint32_t e = 0; e < un.num_edges; ++e) {
      const Edge edge = set->edges_[un.edges_begin + e];
      Node& v = nodes[static_cast<size_t>(edge.to)];
      if (u == 0) {
        v.fail = 0;
      } else {
        int32_t f = un.fail;
        int32_t c = set->child(f, edge.byte);
        while (c < 0 && f != 0) {
          f = nodes[static_cast<size_t>(f)].fail;
          c = set->child(f, edge.byte);
        }
        v.fail = c < 0 ? 0 : c;
      }
      if (v.match < 0) v.match = nodes[static_cast<size_t>(v.fail)].match;
      queue.push_back(edge.to);
    }
  }
  return std::shared_ptr<const StopStringSet>(std::move(set));
}

int32_t StopStringSet::child(int32_t state, uint8_t byte) const {
  const Node& n = nodes_[static_cast<size_t>(state)];
  const Edge* begin = edges_.data() + n.edges_begin;
  const Edge* end = begin + n.num_edges;
  const Edge* it =
      std::lower_bound(begin, end, byte, [](const Edge& e, uint8_t b) { return e.byte < b; });
  return it != end && it->byte == byte ? it->to : -1;
}

int32_t StopStringSet::next(int32_t state, uint8_t byte) const {
  int32_t c = child(state, byte);
  while (c < 0 && state != 0) {
    state = nodes_[static_cast<size_t>(state)].fail;
    c = child(state, byte);
  }
  return c < 0 ? 0 : c;
}

StopStringMatcher::StopStringMatcher(std::shared_ptr<const StopStringSet> set,
                                     bool include_stop_str_in_output)
    : set_(std::move(set)), include_stop_(include_stop_str_in_output) {
  if (set_ && set_->strings().empty()) set_.reset();
}

const std::string& StopStringMatcher::matched_string() const {
  PAGODA_CHECK(matched_.has_value() && set_ != nullptr);
  return set_->strings()[static_cast<size_t>(*matched_)];
}

std::string StopStringMatcher::push(std::string_view text) {
  if (matched_) return {};
  if (!set_) return std::string(text);
  held_.reserve(held_.size() + text.size());
  for (const char ch : text) {
    state_ = set_->next(state_, static_cast<uint8_t>(ch));
    held_.push_back(ch);
    const int32_t m = set_->match(state_);
    if (m >= 0) {
      matched_ = m;
      const size_t len = set_->strings()[static_cast<size_t>(m)].size();
      PAGODA_CHECK(len <= held_.size());
      held_.resize(include_stop_ ? held_.size() : held_.size() - len);
      std::string out = std::move(held_);
      held_.clear();
      return out;
    }
  }
  // Hold back the automaton's suffix, widened to a character boundary.
  size_t emit = held_.size() - static_cast<size_t>(set_->depth(state_));
  while (emit > 0 && emit < held_.size() && (static_cast<uint8_t>(held_[emit]) & 0xC0) == 0x80) {
    --emit;
  }
  std::string out = held_.substr(0, emit);
  held_.erase(0, emit);
  return out;
}

std::string StopStringMatcher::flush() {
  if (matched_) return {};
  std::string out = std::move(held_);
  held_.clear();
  state_ = 0;
  return out;
}

}  // namespace pagoda::engine
