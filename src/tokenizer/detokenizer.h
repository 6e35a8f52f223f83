// IncrementalDetokenizer: turns a growing token sequence into text deltas that are always valid
// UTF-8. Bytes of a sequence that is incomplete so far are held back until a later token
// completes it; bytes that can never form a character become U+FFFD as soon as that is certain
// (and a tail still incomplete at finish() becomes U+FFFD too).
//
// Text is the concatenation of token_to_piece(id, !skip_special), with the decode() rule for the
// first token: when the text starts here (no prompt, or a prompt of control tokens only, like a
// lone BOS) and the vocab adds a space prefix (SPM), the first token loses one leading space.
// After a real prompt the first token keeps its space: "Once upon a time," + " there". No
// clean_spaces post-processing is applied (as llama.cpp's server and vLLM stream text), so for
// valid UTF-8 the deltas concatenate to decode() of the same ids on vocabs without clean_spaces.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {

class IncrementalDetokenizer {
 public:
  // `prompt_tail` gives context for the leading-space rule without emitting it (the last few
  // prompt tokens are enough). `tokenizer` must outlive this object.
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special = true,
                                  std::span<const TokenId> prompt_tail = {});

  // Appends one token and returns the text that became complete (possibly "").
  std::string push(TokenId id);
  // Flushes held-back bytes (an incomplete tail becomes U+FFFD). Further pushes start afresh.
  std::string finish();

  const std::string& text() const { return text_; }  // everything emitted so far

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  bool first_ = true;    // the next token is the first of the text (strip its leading space)
  std::string pending_;  // bytes not yet emitted (a prefix of an incomplete UTF-8 sequence)
  std::string text_;
};

}  // namespace pagoda::tokenizer
