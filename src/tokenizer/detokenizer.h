// IncrementalDetokenizer: turns a growing token sequence into text deltas that never split a
// UTF-8 sequence. Bytes of an incomplete sequence are held back until completed; a sequence that
// can never complete is emitted as U+FFFD at finish().
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {

class IncrementalDetokenizer {
 public:
  // `prompt_tail` gives context (SPM leading-space rule) without emitting it.
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true);

  // Appends one token and returns the text that became complete (possibly "").
  std::string push(TokenId id);
  // Flushes held-back bytes (invalid tails become U+FFFD).
  std::string finish();

  const std::string& text() const { return text_; }  // everything emitted so far

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  bool first_ = true;
  std::string pending_;  // bytes not yet emitted (incomplete UTF-8)
  std::string text_;
};

}  // namespace pagoda::tokenizer
