#include "structured/grammar_cache.h"

#include "structured/gbnf.h"
#include "structured/json_schema.h"
#include "structured/tool_call_grammar.h"

namespace pagoda::structured {

namespace {

Result<Grammar> build_constraint_grammar(const StructuredOutputs& spec) {
  using Kind = StructuredOutputs::Kind;
  switch (spec.kind) {
    case Kind::kJsonSchema:
      return compile_json_schema(spec.spec);
    case Kind::kJsonObject:
      return json_object_grammar();
    case Kind::kRegex:
      return regex_grammar(spec.spec);
    case Kind::kGrammar:
      return parse_gbnf(spec.spec);
    case Kind::kChoice:
      return choice_grammar(spec.choices);
    case Kind::kToolCalls:
      return tool_call_grammar(spec.spec);
    case Kind::kNone:
      break;
  }
  return invalid_argument("structured output: no constraint given");
}

}  // namespace

Result<Grammar> build_grammar(const StructuredOutputs& spec) {
  PAGODA_ASSIGN_OR_RETURN(Grammar grammar, build_constraint_grammar(spec));
  if (spec.trigger.empty() || spec.repeat_trigger) return grammar;
  // After a trigger (a reasoning model's "</think>"), the answer may start after whitespace.
  GrammarBuilder b;
  const Symbol body = b.embed(grammar);
  const int32_t start = b.add_rule("after_trigger");
  b.add_alternative(start, {b.lexeme("[ \\t\\n\\r]{0,16}"), body});
  return std::move(b).build(start);
}

GrammarCache::GrammarCache(std::shared_ptr<const TokenTable> tokens, size_t capacity)
    : tokens_(std::move(tokens)), capacity_(std::max<size_t>(capacity, 1)) {}

std::string GrammarCache::key(const StructuredOutputs& spec) {
  std::string k = std::to_string(static_cast<int>(spec.kind));
  k += ':';
  k += spec.spec;
  for (const std::string& c : spec.choices) {
    k += '\0';
    k += std::to_string(c.size());
    k += ':';
    k += c;
  }
  if (!spec.trigger.empty()) {
    k += '\0';
    k += spec.repeat_trigger ? "repeat:" : "once:";
    k += spec.trigger;
  }
  return k;
}

size_t GrammarCache::size() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get(const StructuredOutputs& spec) {
  const std::string k = key(spec);
  {
    std::lock_guard lock(mutex_);
    auto it = index_.find(k);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  // Compile outside the lock: other requests' lookups go on meanwhile.
  PAGODA_ASSIGN_OR_RETURN(Grammar grammar, build_grammar(spec));
  PAGODA_ASSIGN_OR_RETURN(std::shared_ptr<CompiledGrammar> compiled,
                          CompiledGrammar::compile(grammar, tokens_));
  std::lock_guard lock(mutex_);
  auto it = index_.find(k);
  if (it != index_.end()) return it->second->second;  // compiled meanwhile by another thread
  lru_.emplace_front(k, compiled);
  index_.emplace(k, lru_.begin());
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return std::shared_ptr<const CompiledGrammar>(std::move(compiled));
}

}  // namespace pagoda::structured
