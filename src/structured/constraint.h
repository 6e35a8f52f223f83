// Constraint: what the runner holds per constrained request. A Matcher over the grammar, always
// on, or activated lazily by a trigger (StructuredOutputs::trigger): while the output is free
// text, every token is allowed and the last bytes are watched for the trigger; when it appears,
// a fresh Matcher takes the bytes after it (inside the same token, possibly) and constrains what
// follows, to the end of the output or (repeat) until the grammar's text is complete.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "structured/compiled_grammar.h"
#include "structured/matcher.h"

namespace pagoda::structured {

class Constraint {
 public:
  // trigger "": always active. precondition: grammar->tokens() is set.
  Constraint(std::shared_ptr<const CompiledGrammar> grammar, std::string trigger = {},
             bool repeat = false);

  // Writes the allowed tokens (Matcher::fill_mask) and returns true; returns false and leaves
  // the mask alone while the output is free text (every token allowed).
  bool fill_mask(std::span<uint64_t> mask);
  // Advances by one token. invalid_argument if an active matcher does not allow it.
  Status accept_token(int32_t token);

  // An independent copy in the same state (a draft model's drafts advance a copy).
  std::unique_ptr<Constraint> clone() const;

  bool active() const { return matcher_ != nullptr; }
  const CompiledGrammar& grammar() const { return *grammar_; }

 private:
  std::shared_ptr<const CompiledGrammar> grammar_;
  std::string trigger_;
  bool repeat_ = false;
  std::unique_ptr<Matcher> matcher_;  // null while free
  std::string tail_;                  // free text: its last bytes (< trigger size)
};

}  // namespace pagoda::structured
