// libFuzzer target: parse_gbnf on arbitrary grammar text. Every outcome must be a Status (no
// crash, leak, hang or sanitizer report); a grammar that parses must validate, keep each lexeme
// within the regex pattern limit and valid UTF-8, and start at a rule named root. Nothing more
// expensive than Grammar::validate runs, so each input stays fast.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "structured/gbnf.h"
#include "structured/regex.h"
#include "tokenizer/utf8.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::structured;
  if (size > 8192) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto grammar = parse_gbnf(text);
  if (!grammar.ok()) {
    check(!grammar.status().message().empty());
    return 0;
  }
  check(grammar->validate().ok());
  check(grammar->rules[static_cast<size_t>(grammar->start)].name == "root");
  for (const std::string& lexeme : grammar->lexemes) {
    check(!lexeme.empty());
    check(lexeme.size() <= RegexLimits{}.max_pattern_bytes);
    check(pagoda::tokenizer::utf8::is_valid(lexeme));
  }
  return 0;
}
