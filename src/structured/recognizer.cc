#include "structured/recognizer.h"

#include <mutex>

#include "structured/compiled_grammar.h"
#include "structured/parser.h"

namespace pagoda::structured {
namespace {

Result<bool> recognize(const Grammar& grammar, std::string_view text, bool whole) {
  PAGODA_ASSIGN_OR_RETURN(std::shared_ptr<CompiledGrammar> compiled,
                          CompiledGrammar::compile(grammar, nullptr));
  std::lock_guard lock(compiled->mutex());
  Parser parser(*compiled);
  if (!parser.feed(text)) return false;
  return whole ? parser.can_end() : true;
}

}  // namespace

Result<bool> grammar_accepts(const Grammar& grammar, std::string_view text) {
  return recognize(grammar, text, true);
}

Result<bool> grammar_accepts_prefix(const Grammar& grammar, std::string_view text) {
  return recognize(grammar, text, false);
}

}  // namespace pagoda::structured
