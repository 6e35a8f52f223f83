// Parser: tokens -> AST, following jinja2.parser.Parser (the same precedence, statements
// and error cases). Filters and tests are resolved here; an unknown one is a syntax error
// unless it sits inside an {% if %} or a conditional expression, where Jinja defers the
// error to render time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"

namespace pagoda::jinja {

inline constexpr int kMaxExprDepth = 128;  // AST depth of one expression
inline constexpr int kMaxNesting = 100;    // nested statements / parser recursion

struct ParsedTemplate {
  Body body;
  std::vector<std::string> names;  // NameId -> identifier
};

// Throws TemplateError (kSyntax or kUnsupported, with the line).
ParsedTemplate parse_template(std::string_view source);

}  // namespace pagoda::jinja
