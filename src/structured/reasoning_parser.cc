// ReasoningParser: a byte-at-a-time state machine (see reasoning_parser.h).
#include "structured/reasoning_parser.h"

namespace pagoda::structured {

ReasoningParser::ReasoningParser(ReasoningFormat format)
    : format_(format),
      phase_(format == ReasoningFormat::kNone ? Phase::kRest : Phase::kLeadingSpace) {}

void ReasoningParser::feed(std::string_view text, std::string& reasoning, std::string& rest) {
  size_t i = 0;
  while (i < text.size()) {
    if (phase_ == Phase::kRest) {
      rest.append(text.substr(i));
      return;
    }
    step(text[i++], reasoning, rest);
  }
}

void ReasoningParser::no_open_tag(std::string_view pending, std::string& reasoning,
                                  std::string& rest) {
  std::string tail(pending);  // a copy: pending may view open_'s tag
  if (format_ == ReasoningFormat::kDeepSeekR1) {
    reasoning += held_;
    held_.clear();
    phase_ = Phase::kReasoning;
    for (char c : tail)
      step(c, reasoning, rest);
  } else {
    rest += held_;
    rest += tail;
    held_.clear();
    phase_ = Phase::kRest;
  }
}

void ReasoningParser::step(char c, std::string& reasoning, std::string& rest) {
  switch (phase_) {
    case Phase::kLeadingSpace:
      if (is_json_space(c)) {
        held_.push_back(c);
        return;
      }
      phase_ = Phase::kOpenTag;
      [[fallthrough]];
    case Phase::kOpenTag: {
      std::string released;
      if (open_.step(c, released)) {
        held_.clear();  // the whitespace and the tag are dropped
        phase_ = Phase::kReasoning;
      } else if (!released.empty()) {
        released += open_.held();  // a second '<' restarted the match: not at the start either
        open_.reset();
        no_open_tag(released, reasoning, rest);
      }
      return;
    }
    case Phase::kReasoning:
      if (close_.step(c, reasoning)) phase_ = Phase::kAfterReasoning;
      return;
    case Phase::kAfterReasoning:
      if (c == '\n' || c == '\r') return;
      phase_ = Phase::kRest;
      rest.push_back(c);
      return;
    case Phase::kRest:
      rest.push_back(c);
      return;
  }
}

void ReasoningParser::finish(std::string& reasoning, std::string& rest) {
  switch (phase_) {
    case Phase::kLeadingSpace:
    case Phase::kOpenTag: {
      std::string held(open_.held());
      open_.reset();
      (format_ == ReasoningFormat::kDeepSeekR1 ? reasoning : rest) += held_ + held;
      held_.clear();
      break;
    }
    case Phase::kReasoning:
      reasoning += close_.held();
      close_.reset();
      break;
    case Phase::kAfterReasoning:
    case Phase::kRest:
      break;
  }
  phase_ = Phase::kRest;
}

}  // namespace pagoda::structured
