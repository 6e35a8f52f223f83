// Grammar: the one intermediate form every constraint compiles to (JSON Schema, regex, GBNF,
// choices, tool calls) before the matcher runs it. A context-free grammar whose terminals are
// lexemes: regular expressions over bytes (regex.h's syntax), so the regular parts (a JSON
// string, a number, a run of whitespace) are matched by a DFA a byte at a time and only lexeme
// boundaries reach the Earley parser (matcher.h). The language is exactly the CFG with each
// lexeme replaced by its regex: a lexeme may end wherever its regex matches (no maximal munch),
// so any grammar means what it says.
//
// Build one with GrammarBuilder; Grammar::validate() is what compile (compiled_grammar.h) relies
// on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::structured {

struct Symbol {
  enum class Kind : uint8_t { kRule, kLexeme };
  Kind kind = Kind::kRule;
  int32_t id = 0;  // index into Grammar::rules or Grammar::lexemes
  bool operator==(const Symbol&) const = default;
};

struct Rule {
  std::string name;                               // for messages and debugging
  std::vector<std::vector<Symbol>> alternatives;  // each a sequence; an empty one derives ""
};

struct Grammar {
  std::vector<Rule> rules;
  std::vector<std::string> lexemes;  // regex source (regex.h), full-match semantics
  int32_t start = 0;                 // the rule the whole output must derive

  // Checks ids are in range, the start rule exists, every rule has an alternative, sizes are
  // within limits. (Unproductive rules are pruned at compile time, not refused here.)
  Status validate() const;
  // A readable dump: `name ::= alt | alt` with lexemes as /regex/. For tests and errors.
  std::string to_string() const;
};

// Escapes `text` so the regex matches exactly those bytes.
std::string regex_escape(std::string_view text);

// Builds a Grammar. Rules are referred to by id; a rule may be referenced before it gets its
// alternatives (recursion). Lexemes with identical regex text are shared.
class GrammarBuilder {
 public:
  // A new rule with no alternatives yet. Names need not be unique (a suffix is added).
  int32_t add_rule(std::string_view name);
  void add_alternative(int32_t rule, std::vector<Symbol> sequence);

  Symbol rule(int32_t id) const { return Symbol{Symbol::Kind::kRule, id}; }
  Symbol lexeme(std::string_view regex);
  Symbol literal(std::string_view text) { return lexeme(regex_escape(text)); }

  // Helpers that add a rule and return a reference to it.
  Symbol sequence(std::string_view name, std::vector<Symbol> symbols);
  Symbol choice(std::string_view name, std::vector<std::vector<Symbol>> alternatives);
  Symbol optional(std::string_view name, std::vector<Symbol> symbols);  // "" | symbols
  Symbol star(std::string_view name, std::vector<Symbol> symbols);      // (symbols)*
  Symbol plus(std::string_view name, std::vector<Symbol> symbols);      // (symbols)+
  // symbols repeated min..max times (max < 0: unbounded); refused above 1e6 (the caller names
  // the keyword).
  Result<Symbol> repeat(std::string_view name, std::vector<Symbol> symbols, int64_t min,
                        int64_t max);

  // Copies `other`'s rules and lexemes in and returns a reference to its start rule (to embed a
  // JSON-schema grammar inside a tool-call grammar, say).
  Symbol embed(const Grammar& other);

  size_t num_rules() const { return grammar_.rules.size(); }
  // Finishes with `start` as the start rule; validates.
  Result<Grammar> build(int32_t start) &&;

 private:
  Grammar grammar_;
  std::vector<std::pair<std::string, int32_t>> lexeme_ids_;  // sorted by regex for sharing
};

// Limits that keep a hostile grammar from exhausting memory.
inline constexpr size_t kMaxGrammarRules = 1 << 20;
inline constexpr size_t kMaxGrammarSymbols = 1 << 22;  // total over all alternatives
inline constexpr size_t kMaxLexemeBytes = 1 << 20;     // total regex source

}  // namespace pagoda::structured
