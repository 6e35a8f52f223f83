// Stop strings: an Aho-Corasick automaton over a request's stop strings (StopStringSet, built
// once, immutable, shareable) and a per-sequence streaming matcher (StopStringMatcher) that turns
// the detokenized text into deltas which never contain a prefix of a stop string.
//
// Streaming rule: after every push the matcher holds back the longest suffix of the text that is
// a prefix of some stop string (it might still grow into a match) and emits the rest. The
// automaton's state depth is exactly that suffix length, so each byte costs amortised O(1) however
// many stop strings there are (no per-token scan over the list).
//
// Match rule: the first match to *end* in the text wins; of several ending at the same byte the
// longest (earliest starting) one. The text is cut at the match start (or its end with
// include_stop_str_in_output) and nothing after it is ever emitted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::engine {

class StopStringSet {
 public:
  // Limits that keep the automaton bounded whatever a request asks for.
  static constexpr size_t kMaxStrings = 65536;
  static constexpr size_t kMaxTotalBytes = 1u << 20;

  // invalid_argument naming stop_strings[i] for an empty or invalid UTF-8 string, or a limit
  // exceeded. Duplicates are allowed (the first one is reported).
  static Result<std::shared_ptr<const StopStringSet>> create(std::vector<std::string> strings);

  const std::vector<std::string>& strings() const { return strings_; }
  size_t max_length() const { return max_length_; }
  size_t num_states() const { return nodes_.size(); }

  // The automaton. State 0 is the root (empty suffix).
  int32_t next(int32_t state, uint8_t byte) const;
  // Length of the longest text suffix (ending in `state`) that is a prefix of a stop string.
  int32_t depth(int32_t state) const { return nodes_[static_cast<size_t>(state)].depth; }
  // Index of the longest stop string that is a suffix of the text ending in `state`, or -1.
  int32_t match(int32_t state) const { return nodes_[static_cast<size_t>(state)].match; }

 private:
  struct Edge {
    uint8_t byte;
    int32_t to;
  };
  struct Node {
    int32_t depth = 0;
    int32_t fail = 0;
    int32_t match = -1;
    uint32_t edges_begin = 0;  // into edges_, sorted by byte
    uint32_t num_edges = 0;
  };
  StopStringSet() = default;
  int32_t child(int32_t state, uint8_t byte) const;  // -1 if none

  std::vector<std::string> strings_;
  std::vector<Node> nodes_;
  std::vector<Edge> edges_;
  size_t max_length_ = 0;
};

class StopStringMatcher {
 public:
  // `set` may be null (no stop strings: text passes straight through).
  StopStringMatcher(std::shared_ptr<const StopStringSet> set, bool include_stop_str_in_output);

  // Feeds newly decoded text (valid UTF-8) and returns what may be streamed now (also valid
  // UTF-8: a held-back suffix starts on a character boundary). After a match, matched() is set,
  // the returned text ends at the cut, and further pushes return "".
  std::string push(std::string_view text);
  // No more text: returns everything held back (nothing after a match).
  std::string flush();

  std::optional<int32_t> matched() const { return matched_; }  // index into set->strings()
  const std::string& matched_string() const;                   // precondition: matched()
  size_t num_held_bytes() const { return held_.size(); }

 private:
  std::shared_ptr<const StopStringSet> set_;
  bool include_stop_;
  int32_t state_ = 0;
  std::string held_;  // received, not yet emitted; ends with the automaton's current suffix
  std::optional<int32_t> matched_;
};

}  // namespace pagoda::engine
