// Lexer: template text -> tokens, following jinja2.lexer with Hugging Face's settings
// (trim_blocks and lstrip_blocks on, keep_trailing_newline off, default delimiters).
// Newlines are normalised to "\n" and one trailing newline is dropped first, exactly as
// Jinja does; whitespace control ({%- -%} {%+ +%}) is applied to the data tokens here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda::jinja {

enum class Tok : uint8_t {
  kData,        // literal text (already whitespace-controlled)
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,  // text holds the decoded value
  kInt,
  kFloat,
  kOp,  // text holds the operator: + - * / // ** % ~ ( ) [ ] { } == != < <= > >= = . : | , ;
  kEof,
  kError,  // a lexical error at this point; the parser raises it when it gets here
};

struct Token {
  Tok type = Tok::kEof;
  int line = 1;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  int error_kind = 0;  // kError: the ErrorKind to raise (text holds the message)

  bool is_op(std::string_view op) const { return type == Tok::kOp && text == op; }
  bool is_name(std::string_view name) const { return type == Tok::kName && text == name; }
};

// Tokenizes `source`. Like Jinja's lazy token stream, a lexical error does not fail the
// whole template up front: the tokens before it are returned followed by a kError token, and
// the parser raises the error only if it reads that far. The result always ends with kEof.
std::vector<Token> tokenize(std::string_view source);

// Human-readable token description for error messages ("end of statement block", "'x'").
std::string describe(const Token& t);

}  // namespace pagoda::jinja
