// GrammarCache: StructuredOutputs (the public constraint) → a CompiledGrammar bound to the
// model's TokenTable, compiled once per distinct constraint and shared by every request using it
// (a bounded LRU keyed by kind + text). Thread-safe: the API thread compiles when a request
// arrives (so a bad schema is refused at add_request and the runner finds it compiled), the
// runner looks it up again.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "pagoda/sampling_params.h"
#include "structured/compiled_grammar.h"
#include "structured/grammar.h"

namespace pagoda::structured {

// The grammar a constraint stands for (JSON Schema, json_object, regex, GBNF, choices, tool
// calls). invalid_argument names what is wrong.
Result<Grammar> build_grammar(const StructuredOutputs& spec);

class GrammarCache {
 public:
  GrammarCache(std::shared_ptr<const TokenTable> tokens, size_t capacity = 256);

  Result<std::shared_ptr<const CompiledGrammar>> get(const StructuredOutputs& spec);

  const std::shared_ptr<const TokenTable>& tokens() const { return tokens_; }
  size_t size() const;

 private:
  static std::string key(const StructuredOutputs& spec);

  std::shared_ptr<const TokenTable> tokens_;
  size_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const CompiledGrammar>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
};

}  // namespace pagoda::structured
