// llama.cpp's GBNF grammar syntax → Grammar (grammar.h). `root` is the start rule.
//
//   rule-name ::= alternative | alternative      # comments run to end of line
//   terms: "literal" (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), [a-z] [^"\\] char classes,
//   . (any character), rule references, ( groups ), and the postfix * + ? {n} {n,} {n,m}.
// A rule body without references (only literals, classes and their repetitions) becomes one
// lexeme so the DFA matches it; everything else becomes rules. Token references (<[123]>,
// <think>) and the other llama.cpp extensions are refused by name.
#pragma once

#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace pagoda::structured {

// invalid_argument names the line and column of the problem ("gbnf: line 3 col 7: undefined rule
// 'value'", "gbnf: missing rule 'root'").
Result<Grammar> parse_gbnf(std::string_view text);

// A regex as a one-lexeme grammar; a list of literal choices.
Result<Grammar> regex_grammar(std::string_view pattern);
Result<Grammar> choice_grammar(const std::vector<std::string>& choices);

}  // namespace pagoda::structured
