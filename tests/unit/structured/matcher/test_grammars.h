// Hand-built grammars for the matcher tests (independent of the JSON Schema and GBNF front ends).
#pragma once

#include "structured/grammar.h"

namespace pagoda::structured::testing {

// Any JSON value (RFC 8259), whitespace allowed between tokens as `ws`.
Grammar json_value_grammar();

}  // namespace pagoda::structured::testing
