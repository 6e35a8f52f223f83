#include "structured/grammar.h"

#include <algorithm>

#include <fmt/format.h>

namespace pagoda::structured {

Status Grammar::validate() const {
  if (rules.empty()) return invalid_argument("grammar: no rules");
  if (rules.size() > kMaxGrammarRules)
    return invalid_argument("grammar: {} rules (limit {})", rules.size(), kMaxGrammarRules);
  if (start < 0 || static_cast<size_t>(start) >= rules.size())
    return invalid_argument("grammar: start rule {} out of range", start);
  size_t lexeme_bytes = 0;
  for (const std::string& l : lexemes)
    lexeme_bytes += l.size();
  if (lexeme_bytes > kMaxLexemeBytes)
    return invalid_argument("grammar: {} bytes of lexeme regex (limit {})", lexeme_bytes,
                            kMaxLexemeBytes);
  size_t num_symbols = 0;
  for (const Rule& rule : rules) {
    if (rule.alternatives.empty())
      return invalid_argument("grammar: rule '{}' has no alternatives", rule.name);
    for (const auto& alt : rule.alternatives) {
      num_symbols += alt.size();
      for (const Symbol& s : alt) {
        const size_t limit = s.kind == Symbol::Kind::kRule ? rules.size() : lexemes.size();
        if (s.id < 0 || static_cast<size_t>(s.id) >= limit)
          return invalid_argument("grammar: rule '{}' refers to a missing {} {}", rule.name,
                                  s.kind == Symbol::Kind::kRule ? "rule" : "lexeme", s.id);
      }
    }
  }
  if (num_symbols > kMaxGrammarSymbols)
    return invalid_argument("grammar: {} symbols (limit {})", num_symbols, kMaxGrammarSymbols);
  return Status();
}

std::string Grammar::to_string() const {
  std::string out;
  for (size_t r = 0; r < rules.size(); ++r) {
    out += fmt::format("{}{} ::=", static_cast<int32_t>(r) == start ? "*" : "", rules[r].name);
    for (size_t a = 0; a < rules[r].alternatives.size(); ++a) {
      if (a > 0) out += " |";
      if (rules[r].alternatives[a].empty()) out += " \"\"";
      for (const Symbol& s : rules[r].alternatives[a]) {
        if (s.kind == Symbol::Kind::kRule)
          out += " " + rules[static_cast<size_t>(s.id)].name;
        else
          out += " /" + lexemes[static_cast<size_t>(s.id)] + "/";
      }
    }
    out += "\n";
  }
  return out;
}

std::string regex_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (std::string_view("\\^$.|?*+()[]{}/-").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out += c;  // bytes >= 0x80 pass through: the regex reads UTF-8 and matches them as written
    }
  }
  return out;
}

int32_t GrammarBuilder::add_rule(std::string_view name) {
  grammar_.rules.push_back(Rule{std::string(name), {}});
  return static_cast<int32_t>(grammar_.rules.size() - 1);
}

void GrammarBuilder::add_alternative(int32_t rule, std::vector<Symbol> sequence) {
  grammar_.rules[static_cast<size_t>(rule)].alternatives.push_back(std::move(sequence));
}

Symbol GrammarBuilder::lexeme(std::string_view regex) {
  auto it = std::lower_bound(
      lexeme_ids_.begin(), lexeme_ids_.end(), regex,
      [](const auto& entry, std::string_view key) { return std::string_view(entry.first) < key; });
  if (it != lexeme_ids_.end() && it->first == regex)
    return Symbol{Symbol::Kind::kLexeme, it->second};
  const auto id = static_cast<int32_t>(grammar_.lexemes.size());
  grammar_.lexemes.emplace_back(regex);
  lexeme_ids_.insert(it, {std::string(regex), id});
  return Symbol{Symbol::Kind::kLexeme, id};
}

Symbol GrammarBuilder::sequence(std::string_view name, std::vector<Symbol> symbols) {
  const int32_t r = add_rule(name);
  add_alternative(r, std::move(symbols));
  return rule(r);
}

Symbol GrammarBuilder::choice(std::string_view name,
                              std::vector<std::vector<Symbol>> alternatives) {
  const int32_t r = add_rule(name);
  for (auto& alt : alternatives)
    add_alternative(r, std::move(alt));
  return rule(r);
}

Symbol GrammarBuilder::optional(std::string_view name, std::vector<Symbol> symbols) {
  const int32_t r = add_rule(name);
  add_alternative(r, {});
  add_alternative(r, std::move(symbols));
  return rule(r);
}

Symbol GrammarBuilder::star(std::string_view name, std::vector<Symbol> symbols) {
  // star ::= "" | star symbols   (left recursion: Earley keeps one item per repetition)
  const int32_t r = add_rule(name);
  add_alternative(r, {});
  symbols.insert(symbols.begin(), rule(r));
  add_alternative(r, std::move(symbols));
  return rule(r);
}

Symbol GrammarBuilder::plus(std::string_view name, std::vector<Symbol> symbols) {
  // plus ::= symbols | plus symbols
  const int32_t r = add_rule(name);
  add_alternative(r, symbols);
  symbols.insert(symbols.begin(), rule(r));
  add_alternative(r, std::move(symbols));
  return rule(r);
}

Result<Symbol> GrammarBuilder::repeat(std::string_view name, std::vector<Symbol> symbols,
                                      int64_t min, int64_t max) {
  constexpr int64_t kLimit = 1000000;
  if (min < 0 || min > kLimit || max > kLimit || (max >= 0 && max < min))
    return invalid_argument("repetition {{{},{}}} is out of range", min, max);
  if (min == 0 && max < 0) return star(name, std::move(symbols));
  if (min == 1 && max < 0) return plus(name, std::move(symbols));
  // required ::= symbols^min ; then either symbols* (max < 0) or a chain of (max - min)
  // optional tails: tail_k ::= "" | symbols tail_{k-1}, which stays linear in max - min.
  std::vector<Symbol> seq;
  const int32_t r = add_rule(name);
  const Symbol once = sequence(std::string(name) + "_item", symbols);
  for (int64_t i = 0; i < min; ++i)
    seq.push_back(once);
  if (max < 0) {
    seq.push_back(star(std::string(name) + "_more", {once}));
  } else if (max > min) {
    // tail_0 ::= "" ; tail_k ::= "" | once tail_{k-1}: up to max - min more.
    int32_t tail = add_rule(std::string(name) + "_tail");
    add_alternative(tail, {});
    for (int64_t i = 0; i < max - min; ++i) {
      const int32_t next = add_rule(std::string(name) + "_tail");
      add_alternative(next, {});
      add_alternative(next, {once, rule(tail)});
      tail = next;
    }
    seq.push_back(rule(tail));
  }
  add_alternative(r, std::move(seq));
  return rule(r);
}

Symbol GrammarBuilder::embed(const Grammar& other) {
  const auto rule_base = static_cast<int32_t>(grammar_.rules.size());
  std::vector<int32_t> lexeme_map;
  lexeme_map.reserve(other.lexemes.size());
  for (const std::string& l : other.lexemes)
    lexeme_map.push_back(lexeme(l).id);
  for (const Rule& rule : other.rules) {
    Rule copy{rule.name, {}};
    for (const auto& alt : rule.alternatives) {
      std::vector<Symbol> seq;
      seq.reserve(alt.size());
      for (const Symbol& s : alt) {
        seq.push_back(s.kind == Symbol::Kind::kRule
                          ? Symbol{Symbol::Kind::kRule, s.id + rule_base}
                          : Symbol{Symbol::Kind::kLexeme, lexeme_map[static_cast<size_t>(s.id)]});
      }
      copy.alternatives.push_back(std::move(seq));
    }
    grammar_.rules.push_back(std::move(copy));
  }
  return rule(rule_base + other.start);
}

Result<Grammar> GrammarBuilder::build(int32_t start) && {
  grammar_.start = start;
  PAGODA_RETURN_IF_ERROR(grammar_.validate());
  return std::move(grammar_);
}

}  // namespace pagoda::structured
