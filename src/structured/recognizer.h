// Whole-text recognition with a Grammar, byte by byte and without a tokenizer: what tests,
// `pagoda grammar check` and the differential tests use to ask "is this text in the language?".
// Runs the same parser (parser.h) the token matcher runs.
#pragma once

#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace pagoda::structured {

// True if `text` is a complete sentence of `grammar`. invalid_argument if the grammar does not
// compile (a lexeme's regex is refused, say).
Result<bool> grammar_accepts(const Grammar& grammar, std::string_view text);

// True if `text` can be extended to a sentence (a valid prefix).
Result<bool> grammar_accepts_prefix(const Grammar& grammar, std::string_view text);

}  // namespace pagoda::structured
