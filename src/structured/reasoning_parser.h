// ReasoningParser: the first stage of pagoda::OutputParser. Splits a model's output, as it
// streams, into the reasoning (inside <think>...</think>) and the rest (the answer, which the tool
// call parser reads next).
//
// kDeepSeekR1: the output starts inside the reasoning; leading whitespace and a "<think>" before
// any other byte are dropped; "</think>" ends the reasoning; without one everything is reasoning.
// kQwen3: reasoning only if the output starts with "<think>" (after whitespace, which is then
// dropped); otherwise everything, its leading whitespace included, is the rest. An unclosed
// <think> leaves everything after it reasoning (it has streamed as such).
// Both: the tags themselves are dropped, and so are the newlines ("\n", "\r") right after
// "</think>" (the chat templates write "</think>\n\n" before the answer); the reasoning keeps its
// own text verbatim. kNone: everything is the rest.
// Streaming-exact: what feed()+finish() give is the same for every split of the same output;
// only a possible tag prefix (or the leading whitespace before a possible "<think>") is held.
#pragma once

#include <string>
#include <string_view>

#include "pagoda/output_parser.h"
#include "structured/tag_matcher.h"

namespace pagoda::structured {

class ReasoningParser {
 public:
  explicit ReasoningParser(ReasoningFormat format);

  // Appends the now-certain parts of `text` to `reasoning` and `rest`.
  void feed(std::string_view text, std::string& reasoning, std::string& rest);
  // The output ended: releases what was held.
  void finish(std::string& reasoning, std::string& rest);

 private:
  enum class Phase { kLeadingSpace, kOpenTag, kReasoning, kAfterReasoning, kRest };

  void step(char c, std::string& reasoning, std::string& rest);
  // The output does not start with "<think>": held_ (whitespace) and then the partial tag
  // `pending` go where the format says.
  void no_open_tag(std::string_view pending, std::string& reasoning, std::string& rest);

  ReasoningFormat format_;
  Phase phase_;
  std::string held_;  // kLeadingSpace/kOpenTag: the whitespace before the tag
  TagMatcher open_{"<think>"};
  TagMatcher close_{"</think>"};
};

}  // namespace pagoda::structured
