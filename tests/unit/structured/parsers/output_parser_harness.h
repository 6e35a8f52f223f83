// Test harness shared by output_parser_test and fuzz_output_parser: runs pagoda::OutputParser
// over a text cut at given points and merges the deltas into the whole response (content,
// reasoning, calls), checking the delta protocol on the way: a call's first delta carries its id
// and name and the next index; later deltas carry only arguments, for a call already started.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pagoda/output_parser.h"

namespace pagoda::testing {

struct MergedCall {
  std::string id;
  std::string name;
  std::string arguments;
  bool operator==(const MergedCall&) const = default;
};

struct Merged {
  std::string content;
  std::string reasoning;
  std::vector<MergedCall> calls;
  int32_t num_tool_calls = 0;
  std::string protocol_error;  // empty when every delta kept the protocol
  bool operator==(const Merged&) const = default;

  void merge(const ParsedDelta& delta) {
    content += delta.content;
    reasoning += delta.reasoning;
    for (const ToolCallDelta& call : delta.tool_calls) {
      if (!call.id.empty() || !call.name.empty()) {
        if (call.index != static_cast<int32_t>(calls.size()) || call.id.empty()) {
          protocol_error += "call " + std::to_string(call.index) + " starts out of order; ";
          continue;
        }
        calls.push_back({call.id, call.name, call.arguments});
        continue;
      }
      if (call.index < 0 || call.index >= static_cast<int32_t>(calls.size())) {
        protocol_error += "arguments for unstarted call " + std::to_string(call.index) + "; ";
      } else if (call.arguments.empty()) {
        protocol_error += "empty delta for call " + std::to_string(call.index) + "; ";
      } else {
        calls[static_cast<size_t>(call.index)].arguments += call.arguments;
      }
    }
  }

  std::string describe() const {
    std::string s = "content=[" + content + "] reasoning=[" + reasoning + "]";
    for (const MergedCall& c : calls)
      s += " call{" + c.id + "," + c.name + "," + c.arguments + "}";
    s += " num_tool_calls=" + std::to_string(num_tool_calls);
    if (!protocol_error.empty()) s += " protocol_error=" + protocol_error;
    return s;
  }
};

// Feeds text cut at `cuts` (ascending offsets; out-of-range and repeated ones allowed).
inline Merged parse_with_cuts(const OutputParserOptions& options, std::string_view text,
                              const std::vector<size_t>& cuts) {
  OutputParser parser(options);
  Merged merged;
  size_t begin = 0;
  for (size_t cut : cuts) {
    if (cut < begin || cut > text.size()) continue;
    merged.merge(parser.feed(text.substr(begin, cut - begin)));
    begin = cut;
  }
  merged.merge(parser.feed(text.substr(begin)));
  merged.merge(parser.finish());
  merged.num_tool_calls = parser.num_tool_calls();
  return merged;
}

inline Merged parse_whole(const OutputParserOptions& options, std::string_view text) {
  return parse_with_cuts(options, text, {});
}

}  // namespace pagoda::testing
