// GBNF → Grammar. The parser (gbnf_parser.h) gives a syntax tree; this file decides what becomes a
// lexeme and what a rule. A rule is *inlineable* when its body is regular — terminals, groups,
// repetitions and references to other inlineable rules, no cycle — and its regex stays small
// (bytes, estimated NFA states, group nesting). A subexpression that is regular and small becomes
// ONE lexeme, with the inlineable rules it references spelled out inside it, and runs of such
// items in a sequence share a lexeme; everything else becomes Grammar rules, with repetitions of
// non-regular parts through GrammarBuilder's star/plus/optional/repeat. The regularity analysis
// walks the reference graph with an explicit stack (rule chains may be long), and every size is
// counted before it is allocated.
#include "structured/gbnf.h"

#include <algorithm>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "structured/gbnf_parser.h"
#include "structured/regex.h"
#include "tokenizer/utf8.h"

namespace pagoda::structured {

namespace {

using Node = GbnfNode;
using Kind = GbnfNode::Kind;

constexpr uint64_t kCap = uint64_t{1} << 62;
uint64_t add_sat(uint64_t a, uint64_t b) {
  return std::min(kCap, a + b);  // a, b <= kCap: no overflow
}
uint64_t mul_sat(uint64_t a, uint64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > kCap / b ? kCap : a * b;
}

// A lexeme stays within these so compile_regex (regex.h) takes it: its pattern limit, an eighth
// of its state limit for our estimate (class encodings vary), modest group nesting and depth of
// emit() recursion through inlined rules.
constexpr uint64_t kMaxLexemeRegexBytes = RegexLimits{}.max_pattern_bytes;
constexpr uint64_t kMaxLexemeWeight = RegexLimits{}.max_nfa_states / 8;
constexpr int32_t kMaxLexemeGroups = 64;
constexpr int32_t kMaxLexemeDepth = 1024;
// Regex text generated in all (inlining copies rules into every lexeme that uses them).
constexpr uint64_t kMaxGeneratedRegexBytes = uint64_t{16} << 20;
// A literal too long for one lexeme is split into lexemes of at most this many bytes.
constexpr size_t kLiteralChunkBytes = 4096;
// `.` in GBNF matches any code point, the newline included.
constexpr std::string_view kAnyRegex = "[\\x00-\\u{10FFFF}]";
constexpr size_t kMaxChoices = 100000;

// What a subexpression would cost as (part of) a lexeme. `bytes` is an upper bound of its regex
// text, `weight` an estimate of its NFA states.
struct Metrics {
  bool regular = true;   // no reference to a rule that is not inlineable
  bool empty = true;     // matches only "" (emits no regex)
  bool nullable = true;  // matches "" (among others)
  uint64_t bytes = 0;
  uint64_t weight = 0;
  int32_t groups = 0;  // nesting of (?: ) in the regex
  int32_t depth = 1;   // emit() recursion
};

bool fits(const Metrics& m) {
  return m.regular && m.bytes <= kMaxLexemeRegexBytes && m.weight <= kMaxLexemeWeight &&
         m.groups <= kMaxLexemeGroups && m.depth <= kMaxLexemeDepth;
}

// Metrics of `a` followed by `b`.
Metrics concat(const Metrics& a, const Metrics& b) {
  Metrics m;
  m.regular = a.regular && b.regular;
  m.empty = a.empty && b.empty;
  m.nullable = a.nullable && b.nullable;
  m.bytes = add_sat(a.bytes, b.bytes);
  m.weight = add_sat(a.weight, b.weight);
  m.groups = std::max(a.groups, b.groups);
  m.depth = std::max(a.depth, b.depth);
  return m;
}

void append_class_char(std::string& out, uint32_t cp) {
  if (cp < 0x20 || cp == 0x7f) {
    out += fmt::format("\\x{:02x}", cp);
  } else if (cp < 0x80) {
    if (std::string_view("\\]^-[").find(static_cast<char>(cp)) != std::string_view::npos)
      out += '\\';
    out += static_cast<char>(cp);
  } else {
    tokenizer::utf8::append(out, cp);
  }
}

void append_quantifier(std::string& out, int32_t min, int32_t max) {
  if (min == 0 && max < 0) {
    out += '*';
  } else if (min == 1 && max < 0) {
    out += '+';
  } else if (min == 0 && max == 1) {
    out += '?';
  } else if (max < 0) {
    out += fmt::format("{{{},}}", min);
  } else if (min == max) {
    out += fmt::format("{{{}}}", min);
  } else {
    out += fmt::format("{{{},{}}}", min, max);
  }
}

class Lowerer {
 public:
  Lowerer(std::string_view text, const GbnfAst& ast)
      : text_(text),
        ast_(ast),
        state_(ast.rules.size(), 0),
        inlineable_(ast.rules.size(), false),
        rule_ids_(ast.rules.size(), -1) {}

  Result<Grammar> run() {
    analyze();
    const int32_t root = grammar_rule(ast_.root);
    while (!pending_.empty()) {
      const int32_t r = pending_.back();
      pending_.pop_back();
      PAGODA_RETURN_IF_ERROR(lower_rule(r));
    }
    return std::move(builder_).build(root);
  }

 private:
  template <typename... Args>
  Status error_at(uint32_t offset, fmt::format_string<Args...> f, Args&&... args) const {
    return invalid_argument("gbnf: {}: {}", gbnf_position(text_, offset),
                            fmt::format(f, std::forward<Args>(args)...));
  }
  const GbnfNode& body(int32_t rule) const { return ast_.rules[static_cast<size_t>(rule)].body; }
  const Metrics& metrics(const Node& n) const { return metrics_.at(&n); }

  static void collect_refs(const Node& n, std::vector<int32_t>& refs) {
    if (n.kind == Kind::kRef) refs.push_back(n.rule);
    for (const Node& c : n.children)
      collect_refs(c, refs);
  }

  // Computes the metrics of `n` and everything below it (references use the finished metrics of
  // the rules they name; a rule still in progress is part of a cycle, so not regular).
  const Metrics& measure(const Node& n) {
    Metrics m;
    switch (n.kind) {
      case Kind::kLiteral:
        m.empty = m.nullable = n.text.empty();
        m.bytes = regex_escape(n.text).size();
        m.weight = n.text.size();
        break;
      case Kind::kClass:
        m.empty = m.nullable = false;
        m.bytes = add_sat(3, mul_sat(n.ranges.size(), 9));
        m.weight = add_sat(24, mul_sat(n.ranges.size(), 4));
        break;
      case Kind::kAny:
        m.empty = m.nullable = false;
        m.bytes = kAnyRegex.size();
        m.weight = 24;
        break;
      case Kind::kRef: {
        const auto r = static_cast<size_t>(n.rule);
        if (state_[r] == 2 && inlineable_[r]) {
          m = metrics(body(n.rule));
          ++m.depth;
        } else {
          m.regular = false;
          m.empty = m.nullable = false;
        }
        break;
      }
      case Kind::kSeq:
      case Kind::kAlt: {
        bool any_nullable = false;
        for (const Node& c : n.children) {
          m = concat(m, measure(c));
          any_nullable = any_nullable || metrics(c).nullable;
        }
        ++m.depth;
        if (n.kind == Kind::kAlt) {
          m.nullable = any_nullable;
          m.bytes = add_sat(m.bytes, n.children.size() + 5);  // (?: | | )?
          m.weight = add_sat(m.weight, 1);
          ++m.groups;
        }
        break;
      }
      case Kind::kRepeat: {
        const Metrics& c = measure(n.children[0]);
        m = c;
        m.empty = c.empty || n.max == 0;
        m.nullable = c.nullable || n.min == 0;
        m.bytes = add_sat(c.bytes, 4 + 13);  // (?: ) and {nnnnn,mmmmm}
        // The NFA copies the child per count; removing the epsilons of a nullable child makes the
        // edges grow with the square of the count ((a?){n} needs ~n²/2).
        const auto count = static_cast<uint64_t>(std::max(n.max < 0 ? n.min : n.max, int32_t{1}));
        m.weight = add_sat(mul_sat(mul_sat(c.weight, count), c.nullable ? (count + 1) / 2 : 1), 1);
        ++m.groups;
        ++m.depth;
        break;
      }
    }
    return metrics_[&n] = m;
  }

  // Which rules are inlineable, leaves first, by a depth-first walk of the reference graph with an
  // explicit stack.
  void analyze() {
    std::vector<std::vector<int32_t>> refs(ast_.rules.size());
    for (size_t r = 0; r < ast_.rules.size(); ++r)
      collect_refs(ast_.rules[r].body, refs[r]);
    std::vector<std::pair<int32_t, size_t>> stack;
    for (size_t start = 0; start < ast_.rules.size(); ++start) {
      if (state_[start] != 0) continue;
      state_[start] = 1;
      stack.emplace_back(static_cast<int32_t>(start), 0);
      while (!stack.empty()) {
        const auto r = static_cast<size_t>(stack.back().first);
        const size_t next = stack.back().second++;
        if (next < refs[r].size()) {
          const auto t = static_cast<size_t>(refs[r][next]);
          if (state_[t] == 0) {
            state_[t] = 1;
            stack.emplace_back(static_cast<int32_t>(t), 0);
          }
          continue;
        }
        inlineable_[r] = fits(measure(ast_.rules[r].body));
        state_[r] = 2;
        stack.pop_back();
      }
    }
  }

  // The regex of `n` (references inlined). Precondition: fits(metrics(n)).
  void emit(const Node& n, std::string& out) const {
    if (metrics(n).empty) return;
    switch (n.kind) {
      case Kind::kLiteral:
        out += regex_escape(n.text);
        break;
      case Kind::kClass:
        out += n.negated ? "[^" : "[";
        for (const GbnfCharRange& r : n.ranges) {
          append_class_char(out, r.lo);
          if (r.hi != r.lo) {
            out += '-';
            append_class_char(out, r.hi);
          }
        }
        out += ']';
        break;
      case Kind::kAny:
        out += kAnyRegex;
        break;
      case Kind::kRef:
        emit(body(n.rule), out);
        break;
      case Kind::kSeq:
        for (const Node& c : n.children)
          emit(c, out);
        break;
      case Kind::kAlt: {
        bool has_empty = false, first = true;
        out += "(?:";
        for (const Node& c : n.children) {
          if (metrics(c).empty) {
            has_empty = true;
            continue;
          }
          if (!first) out += '|';
          first = false;
          emit(c, out);
        }
        out += has_empty ? ")?" : ")";
        break;
      }
      case Kind::kRepeat: {
        // An alternation without an empty branch is already one group: (?:a|b).
        const Node& c = n.children[0];
        const bool atom =
            c.kind == Kind::kClass || c.kind == Kind::kAny ||
            (c.kind == Kind::kLiteral && c.text.size() == 1) ||
            (c.kind == Kind::kAlt && std::none_of(c.children.begin(), c.children.end(),
                                                  [&](const Node& a) { return metrics(a).empty; }));
        if (!atom) out += "(?:";
        emit(c, out);
        if (!atom) out += ')';
        append_quantifier(out, n.min, n.max);
        break;
      }
    }
  }

  Status add_regex(std::string regex, uint32_t offset, std::vector<Symbol>& out) {
    generated_bytes_ += regex.size();
    if (generated_bytes_ > kMaxGeneratedRegexBytes)
      return error_at(offset, "inlining rules generates more than {} bytes of regex",
                      kMaxGeneratedRegexBytes);
    if (regex.empty()) return Status();
    const Symbol lexeme = builder_.lexeme(regex);
    const size_t size = regex.size();
    if (lexemes_.insert(std::move(regex)).second) {
      lexeme_bytes_ += size;
      if (lexeme_bytes_ > kMaxLexemeBytes)
        return error_at(offset, "the grammar's lexemes exceed {} bytes of regex", kMaxLexemeBytes);
    }
    out.push_back(lexeme);
    return count_symbols(1, offset);
  }

  // One lexeme for the sequence `nodes`. Precondition: their concatenation fits.
  Status add_lexeme(std::span<const Node* const> nodes, std::vector<Symbol>& out) {
    std::string regex;
    for (const Node* n : nodes)
      emit(*n, regex);
    return add_regex(std::move(regex), nodes.front()->offset, out);
  }

  Status count_symbols(size_t n, uint32_t offset) {
    num_symbols_ += n;
    if (num_symbols_ > kMaxGrammarSymbols)
      return error_at(offset, "the grammar grows beyond {} symbols", kMaxGrammarSymbols);
    return Status();
  }

  int32_t grammar_rule(int32_t rule) {
    int32_t& id = rule_ids_[static_cast<size_t>(rule)];
    if (id < 0) {
      id = builder_.add_rule(ast_.rules[static_cast<size_t>(rule)].name);
      pending_.push_back(rule);
    }
    return id;
  }

  // Appends the symbols that derive `n` to `out`. `name` names the helper rules.
  Status lower(const Node& n, const std::string& name, std::vector<Symbol>& out) {
    if (fits(metrics(n))) {
      const Node* one = &n;
      return add_lexeme({&one, 1}, out);
    }
    switch (n.kind) {
      case Kind::kLiteral: {
        for (size_t i = 0; i < n.text.size();) {
          size_t end = std::min(n.text.size(), i + kLiteralChunkBytes);
          while (end < n.text.size() && (static_cast<unsigned char>(n.text[end]) & 0xC0) == 0x80)
            --end;  // split between code points
          PAGODA_RETURN_IF_ERROR(
              add_regex(regex_escape(std::string_view(n.text).substr(i, end - i)), n.offset, out));
          i = end;
        }
        return Status();
      }
      case Kind::kClass:
      case Kind::kAny:
        return error_at(n.offset, "character class is too large");
      case Kind::kRef:
        out.push_back(builder_.rule(grammar_rule(n.rule)));
        return count_symbols(1, n.offset);
      case Kind::kSeq: {
        // Runs of children that fit together share one lexeme.
        std::vector<const Node*> run;
        Metrics acc;
        for (const Node& c : n.children) {
          const Metrics& m = metrics(c);
          if (fits(m)) {
            const Metrics joined = concat(acc, m);
            if (!run.empty() && !fits(joined)) {
              PAGODA_RETURN_IF_ERROR(add_lexeme(run, out));
              run.clear();
              acc = m;
            } else {
              acc = joined;
            }
            run.push_back(&c);
            continue;
          }
          if (!run.empty()) PAGODA_RETURN_IF_ERROR(add_lexeme(run, out));
          run.clear();
          acc = Metrics();
          PAGODA_RETURN_IF_ERROR(lower(c, name, out));
        }
        if (!run.empty()) PAGODA_RETURN_IF_ERROR(add_lexeme(run, out));
        return Status();
      }
      case Kind::kAlt: {
        const int32_t r = builder_.add_rule(name + "-alt");
        for (const Node& c : n.children) {
          std::vector<Symbol> alternative;
          PAGODA_RETURN_IF_ERROR(lower(c, name, alternative));
          builder_.add_alternative(r, std::move(alternative));
        }
        out.push_back(builder_.rule(r));
        return count_symbols(1, n.offset);
      }
      case Kind::kRepeat:
        return lower_repeat(n, name, out);
    }
    return Status();
  }

  Status lower_repeat(const Node& n, const std::string& name, std::vector<Symbol>& out) {
    std::vector<Symbol> item;
    PAGODA_RETURN_IF_ERROR(lower(n.children[0], name, item));
    if (item.empty() || n.max == 0) return Status();  // matches only ""
    if (n.min == 1 && n.max == 1) {
      out.insert(out.end(), item.begin(), item.end());
      return Status();
    }
    // What GrammarBuilder::repeat adds at most: the item once, min copies, a chain of max - min
    // optional tails of two symbols each.
    const size_t span = n.max > n.min ? static_cast<size_t>(n.max - n.min) : 0;
    if (builder_.num_rules() + span + 4 > kMaxGrammarRules)
      return error_at(n.offset, "the grammar grows beyond {} rules", kMaxGrammarRules);
    PAGODA_RETURN_IF_ERROR(
        count_symbols(item.size() + static_cast<size_t>(n.min) + 2 * span + 3, n.offset));
    Symbol s;
    if (n.min == 0 && n.max < 0) {
      s = builder_.star(name + "-star", std::move(item));
    } else if (n.min == 1 && n.max < 0) {
      s = builder_.plus(name + "-plus", std::move(item));
    } else if (n.min == 0 && n.max == 1) {
      s = builder_.optional(name + "-opt", std::move(item));
    } else {
      auto repeated = builder_.repeat(name + "-rep", std::move(item), n.min, n.max);
      if (!repeated.ok()) return error_at(n.offset, "{}", repeated.status().message());
      s = *repeated;
    }
    out.push_back(s);
    return Status();
  }

  Status lower_rule(int32_t rule) {
    const GbnfRule& def = ast_.rules[static_cast<size_t>(rule)];
    const int32_t id = rule_ids_[static_cast<size_t>(rule)];
    const Node& n = def.body;
    if (n.kind == Kind::kAlt && !fits(metrics(n))) {
      for (const Node& c : n.children) {
        std::vector<Symbol> alternative;
        PAGODA_RETURN_IF_ERROR(lower(c, def.name, alternative));
        builder_.add_alternative(id, std::move(alternative));
      }
      return Status();
    }
    std::vector<Symbol> alternative;
    PAGODA_RETURN_IF_ERROR(lower(n, def.name, alternative));
    builder_.add_alternative(id, std::move(alternative));
    return Status();
  }

  std::string_view text_;
  const GbnfAst& ast_;
  std::vector<uint8_t> state_;  // per rule: 0 not seen, 1 in progress, 2 done
  std::vector<bool> inlineable_;
  std::vector<int32_t> rule_ids_;  // per rule: its Grammar rule, or -1 (none yet)
  std::vector<int32_t> pending_;   // rules with an id whose body is not lowered yet
  std::unordered_map<const Node*, Metrics> metrics_;
  GrammarBuilder builder_;
  std::unordered_set<std::string> lexemes_;
  uint64_t lexeme_bytes_ = 0;
  uint64_t generated_bytes_ = 0;
  size_t num_symbols_ = 0;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text) {
  PAGODA_ASSIGN_OR_RETURN(GbnfAst ast, parse_gbnf_ast(text));
  return Lowerer(text, ast).run();
}

Result<Grammar> regex_grammar(std::string_view pattern) {
  auto compiled = compile_regex(pattern);
  if (!compiled.ok()) return compiled.status();
  GrammarBuilder builder;
  const int32_t root = builder.add_rule("root");
  std::vector<Symbol> alternative;
  if (!pattern.empty()) alternative.push_back(builder.lexeme(pattern));
  builder.add_alternative(root, std::move(alternative));
  return std::move(builder).build(root);
}

Result<Grammar> choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) return invalid_argument("choice: the list of choices is empty");
  if (choices.size() > kMaxChoices)
    return invalid_argument("choice: {} choices (limit {})", choices.size(), kMaxChoices);
  size_t total = 0;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (!tokenizer::utf8::is_valid(choices[i]))
      return invalid_argument("choice: choice {} is not valid UTF-8", i);
    total += choices[i].size();
    if (total > kMaxLexemeBytes)
      return invalid_argument("choice: the choices exceed {} bytes", kMaxLexemeBytes);
  }
  // Sorted and distinct: a duplicate adds only ambiguity, and the builder files lexemes added in
  // order at the end of its sorted index (linear, not quadratic, in the number of choices).
  std::vector<std::string> regexes;
  regexes.reserve(choices.size());
  for (const std::string& choice : choices)
    regexes.push_back(regex_escape(choice));
  std::sort(regexes.begin(), regexes.end());
  regexes.erase(std::unique(regexes.begin(), regexes.end()), regexes.end());
  GrammarBuilder builder;
  const int32_t root = builder.add_rule("root");
  for (const std::string& regex : regexes) {
    std::vector<Symbol> alternative;
    if (!regex.empty()) alternative.push_back(builder.lexeme(regex));
    builder.add_alternative(root, std::move(alternative));
  }
  return std::move(builder).build(root);
}

}  // namespace pagoda::structured
