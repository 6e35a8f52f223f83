// parse_gbnf: llama.cpp-style grammars (JSON, arithmetic, a list, chess moves, identifiers,
// recursion, UTF-8 classes, repetition bounds) checked by acceptance through the recognizer
// (whole text and prefix); the lowering (regular rules inlined into one lexeme, recursion kept as
// rules, sizes guarded); every error naming its line and column; hostile input (deep nesting,
// huge counts, unterminated tokens, invalid UTF-8, NUL bytes) refused cleanly. Also
// regex_grammar and choice_grammar.
#include "structured/gbnf.h"

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "structured/gbnf_parser.h"
#include "structured/recognizer.h"
#include "tokenizer/utf8.h"

namespace pagoda::structured {
namespace {

Grammar parse(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().to_string() << "\n" << text;
  if (!g.ok()) return Grammar{};
  EXPECT_TRUE(g->validate().ok());
  return std::move(g).value();
}

// The error message of a grammar that must be refused.
std::string refused(std::string_view text) {
  auto g = parse_gbnf(text);
  EXPECT_FALSE(g.ok()) << "accepted:\n" << text;
  if (g.ok()) return "";
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  return g.status().message();
}

bool accepts(const Grammar& g, std::string_view text) {
  auto r = grammar_accepts(g, text);
  EXPECT_TRUE(r.ok()) << r.status().to_string() << "\n" << g.to_string();
  return r.ok() && *r;
}

bool accepts_prefix(const Grammar& g, std::string_view text) {
  auto r = grammar_accepts_prefix(g, text);
  EXPECT_TRUE(r.ok()) << r.status().to_string() << "\n" << g.to_string();
  return r.ok() && *r;
}

// --- terminals -------------------------------------------------------------------------------

TEST(GbnfTest, LiteralEscapes) {
  const Grammar g = parse(R"(root ::= "a\n\t\r\\\"\[\]\x41\u00e9\U0001F600")");
  EXPECT_TRUE(accepts(g, "a\n\t\r\\\"[]A\xC3\xA9\xF0\x9F\x98\x80"));
  EXPECT_FALSE(accepts(g, "a\n\t\r\\\"[]A\xC3\xA9"));
  EXPECT_FALSE(accepts(g, "a\\n"));
}

TEST(GbnfTest, LiteralSpecialRegexCharactersAreLiteral) {
  const Grammar g = parse(R"(root ::= "a.b*c+(d)|[e]{2}^$?/-\\")");
  EXPECT_TRUE(accepts(g, "a.b*c+(d)|[e]{2}^$?/-\\"));
  EXPECT_FALSE(accepts(g, "axbc+(d)|[e]{2}^$?/-\\"));
  EXPECT_FALSE(accepts(g, "a.bbc+(d)|[e]{2}^$?/-\\"));
}

TEST(GbnfTest, RawUtf8AndNewlineInsideLiteral) {
  const Grammar g = parse("root ::= \"h\xC3\xA9\nllo\"");
  EXPECT_TRUE(accepts(g, "h\xC3\xA9\nllo"));
  EXPECT_FALSE(accepts(g, "hello"));
}

TEST(GbnfTest, EscapedNulIsACharacter) {
  const Grammar g = parse(R"(root ::= "a\x00b" [\x00-\x01])");
  EXPECT_TRUE(accepts(g, std::string("a\0b\0", 4)));
  EXPECT_TRUE(accepts(g, std::string("a\0b\x01", 4)));
  EXPECT_FALSE(accepts(g, "ab\x01"));
}

TEST(GbnfTest, CharClasses) {
  const Grammar g = parse(R"(root ::= [a-z0-9_-]+)");
  EXPECT_TRUE(accepts(g, "abc-9_"));
  EXPECT_FALSE(accepts(g, "ABC"));
  EXPECT_FALSE(accepts(g, ""));

  // Escapes and the characters a regex class treats specially.
  const Grammar special = parse(R"(root ::= [\]\[\\^-]+ [a^] [-a] [a-])");
  EXPECT_TRUE(accepts(special, "][\\^-^-a"));
  EXPECT_TRUE(accepts(special, "-a-a"));
  EXPECT_FALSE(accepts(special, "b^-a"));
  EXPECT_FALSE(accepts(special, "-ab-"));

  const Grammar negated = parse(R"(root ::= "\"" [^"\\\x00-\x1F]* "\"")");
  EXPECT_TRUE(accepts(negated, "\"hello w\xC3\xB6rld\""));
  EXPECT_FALSE(accepts(negated, "\"a\"b\""));
  EXPECT_FALSE(accepts(negated, "\"a\\b\""));
  EXPECT_FALSE(accepts(negated, "\"a\nb\""));
}

TEST(GbnfTest, Utf8Classes) {
  const Grammar non_ascii = parse(R"(root ::= [^\x00-\x7F]+)");
  EXPECT_TRUE(accepts(non_ascii, "\xC3\xA9\xC3\xBC\xF0\x9F\x98\x80\xE4\xBD\xA0"));
  EXPECT_FALSE(accepts(non_ascii,
                       "\xC3\xA9"
                       "a"));
  EXPECT_FALSE(accepts(non_ascii, "\xFF"));  // not UTF-8

  const Grammar hiragana = parse("root ::= [\xE3\x81\x81-\xE3\x82\x9F]+");             // [ぁ-ゟ]
  EXPECT_TRUE(accepts(hiragana, "\xE3\x81\xB2\xE3\x82\x89\xE3\x81\x8C\xE3\x81\xAA"));  // ひらがな
  EXPECT_FALSE(accepts(hiragana, "\xE3\x82\xAB"));  // カ (katakana)

  const Grammar astral = parse(R"(root ::= [\U0001F600-\U0001F64F] [\u00e0-\u00ff])");
  EXPECT_TRUE(accepts(astral, "\xF0\x9F\x98\x81\xC3\xA9"));
  EXPECT_FALSE(accepts(astral, "\xF0\x9F\x9A\x80\xC3\xA9"));  // U+1F680 is outside
}

TEST(GbnfTest, AnyCharIsOneCodePointNewlineIncluded) {
  const Grammar g = parse("root ::= \"<\" . \">\"");
  EXPECT_TRUE(accepts(g, "<a>"));
  EXPECT_TRUE(accepts(g, "<\n>"));
  EXPECT_TRUE(accepts(g, "<\xC3\xA9>"));
  EXPECT_TRUE(accepts(g, "<\xF0\x9F\x98\x80>"));
  EXPECT_FALSE(accepts(g, "<>"));
  EXPECT_FALSE(accepts(g, "<ab>"));
  EXPECT_FALSE(accepts(g, "<\xFF>"));
}

// --- operators -------------------------------------------------------------------------------

TEST(GbnfTest, RepetitionBounds) {
  const Grammar exact = parse(R"(root ::= "a"{3})");
  EXPECT_FALSE(accepts(exact, "aa"));
  EXPECT_TRUE(accepts(exact, "aaa"));
  EXPECT_FALSE(accepts(exact, "aaaa"));

  const Grammar at_least = parse(R"(root ::= "ab"{2,})");
  EXPECT_FALSE(accepts(at_least, "ab"));
  EXPECT_TRUE(accepts(at_least, "abab"));
  EXPECT_TRUE(accepts(at_least, "ababababab"));
  EXPECT_FALSE(accepts(at_least, "ababa"));

  const Grammar range = parse(R"(root ::= [0-9]{ 2 , 4 } "x"{0,2})");
  EXPECT_FALSE(accepts(range, "1"));
  EXPECT_TRUE(accepts(range, "12"));
  EXPECT_TRUE(accepts(range, "1234xx"));
  EXPECT_FALSE(accepts(range, "12345"));
  EXPECT_FALSE(accepts(range, "12xxx"));

  const Grammar ops = parse(R"(root ::= "a"? "b"* "c"+)");
  EXPECT_TRUE(accepts(ops, "c"));
  EXPECT_TRUE(accepts(ops, "abbbcc"));
  EXPECT_FALSE(accepts(ops, "aab"));
  EXPECT_FALSE(accepts(ops, "ab"));

  const Grammar zero = parse(R"(root ::= "x" "a"{0} "y")");
  EXPECT_TRUE(accepts(zero, "xy"));
  EXPECT_FALSE(accepts(zero, "xay"));
}

TEST(GbnfTest, PostfixOperatorsStack) {
  // As llama.cpp reads it: each operator applies to what came before, repetitions included.
  const Grammar g = parse(R"(root ::= "ab"{2}{2} "c"{2}?)");
  EXPECT_TRUE(accepts(g, "abababab"));
  EXPECT_TRUE(accepts(g, "ababababcc"));
  EXPECT_FALSE(accepts(g, "ababababc"));
  EXPECT_FALSE(accepts(g, "ababab"));
}

TEST(GbnfTest, GroupsAndAlternatives) {
  const Grammar g = parse(R"(root ::= ("a" | "b" "c")* "d" | "e" ( ) "f")");
  EXPECT_TRUE(accepts(g, "d"));
  EXPECT_TRUE(accepts(g, "abcad"));
  EXPECT_TRUE(accepts(g, "ef"));
  EXPECT_FALSE(accepts(g, "bd"));
  EXPECT_FALSE(accepts(g, "ed"));
}

TEST(GbnfTest, EmptyAlternatives) {
  const Grammar g = parse("space ::= | \" \" | \"\\n\" [ \\t]{0,20}\nroot ::= \"[\" space \"]\"");
  EXPECT_TRUE(accepts(g, "[]"));
  EXPECT_TRUE(accepts(g, "[ ]"));
  EXPECT_TRUE(accepts(g, "[\n\t  ]"));
  EXPECT_FALSE(accepts(g, "[  ]"));
  const Grammar empty = parse(R"(root ::= "")");
  EXPECT_TRUE(accepts(empty, ""));
  EXPECT_FALSE(accepts(empty, "a"));
}

TEST(GbnfTest, CommentsNewlinesAndContinuation) {
  const std::string text =
      "# a comment before the rules\r\n"
      "root ::= # right after ::=\r\n"
      "  item (\r\n"
      "    \",\" # inside a group, newlines continue the rule\n"
      "    item\n"
      "  )* |\n"
      "  \"none\"   # a newline after | continues the rule too\n"
      "\n"
      "item ::= [a-z]+\t# tabs are spaces\n";
  const Grammar g = parse(text);
  EXPECT_TRUE(accepts(g, "a,bc,d"));
  EXPECT_TRUE(accepts(g, "none"));
  EXPECT_FALSE(accepts(g, "a,"));
  // Outside parentheses a newline ends the rule: the next line must start a new rule.
  EXPECT_EQ(refused("root ::= \"a\"\n  \"b\"\n"),
            "gbnf: line 2 col 3: expected a rule name, found '\"'");
}

// --- whole grammars --------------------------------------------------------------------------

constexpr std::string_view kJson = R"g(
root   ::= ws value ws
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)?
ws     ::= [ \t\n]*
)g";

TEST(GbnfTest, Json) {
  const Grammar g = parse(kJson);
  EXPECT_TRUE(accepts(g, R"({"a": [1, -2.5e3, true, null, "x\u00e9\n"], "b": {}})"));
  EXPECT_TRUE(accepts(g, " [ ] "));
  EXPECT_TRUE(accepts(g, "\"caf\xC3\xA9\""));
  EXPECT_FALSE(accepts(g, R"({"a": })"));
  EXPECT_FALSE(accepts(g, R"([1, 2,])"));
  EXPECT_FALSE(accepts(g, R"("\x")"));
  EXPECT_FALSE(accepts(g, "01"));
  EXPECT_TRUE(accepts_prefix(g, R"({"a": [1,)"));
  EXPECT_TRUE(accepts_prefix(g, R"({"key": "val)"));
  EXPECT_FALSE(accepts_prefix(g, R"({"a": ])"));
  EXPECT_FALSE(accepts_prefix(g, R"({"a" 1)"));
  // The regular rules (string, number, ws) are inlined: no Grammar rule carries their names.
  const std::string dump = g.to_string();
  EXPECT_EQ(dump.find("\nstring ::="), std::string::npos) << dump;
  EXPECT_EQ(dump.find("\nnumber ::="), std::string::npos) << dump;
  EXPECT_EQ(dump.find("\nws ::="), std::string::npos) << dump;
  EXPECT_NE(dump.find("\nvalue ::="), std::string::npos) << dump;
}

TEST(GbnfTest, Arithmetic) {
  const Grammar g = parse(R"g(
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")" | "-" factor
number ::= [0-9]+ ("." [0-9]+)?
)g");
  EXPECT_TRUE(accepts(g, "1+2*(3-4.5)/-7"));
  EXPECT_TRUE(accepts(g, "((((1))))"));
  EXPECT_FALSE(accepts(g, "1+"));
  EXPECT_FALSE(accepts(g, "(1"));
  EXPECT_FALSE(accepts(g, "1)"));
  EXPECT_TRUE(accepts_prefix(g, "(1+"));
  EXPECT_TRUE(accepts_prefix(g, ""));
  EXPECT_FALSE(accepts_prefix(g, "1+)"));
}

TEST(GbnfTest, List) {
  const Grammar g = parse(R"(root ::= ("- " item)+
item ::= [^\n]+ "\n")");
  EXPECT_TRUE(accepts(g, "- milk\n- eggs \xF0\x9F\xA5\x9A\n"));
  EXPECT_FALSE(accepts(g, "- milk"));
  EXPECT_FALSE(accepts(g, "milk\n"));
  EXPECT_FALSE(accepts(g, "- \n"));
  EXPECT_TRUE(accepts_prefix(g, "- milk\n- e"));
  // Fully regular: one rule, one lexeme.
  EXPECT_EQ(g.rules.size(), 1u) << g.to_string();
  EXPECT_EQ(g.lexemes.size(), 1u) << g.to_string();
}

TEST(GbnfTest, ChessMoves) {
  const Grammar g = parse(R"g(
# two moves per numbered line
root ::= (
    "1. " move " " move "\n"
    ([1-9] [0-9]? ". " move " " move "\n")+
)
move    ::= (pawn | nonpawn | castle) [+#]?
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBRQ])?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
castle  ::= "O-O" "-O"?
)g");
  EXPECT_TRUE(accepts(g, "1. e4 e5\n2. Nf3 Nc6\n"));
  EXPECT_TRUE(accepts(g, "1. d4 d5\n2. c4 dxc4\n10. O-O-O Qxd8#\n11. e8=Q+ O-O\n"));
  EXPECT_FALSE(accepts(g, "1. e4 e5\n"));  // one more line is required
  EXPECT_FALSE(accepts(g, "1. e9 e5\n2. Nf3 Nc6\n"));
  EXPECT_FALSE(accepts(g, "1. e4 e5\n2. Zf3 Nc6\n"));
  EXPECT_TRUE(accepts_prefix(g, "1. e4 e5\n2. Nf"));
  EXPECT_FALSE(accepts_prefix(g, "1. e4 e5\n2. Nz"));
  // Nothing recursive: the whole grammar is one lexeme.
  EXPECT_EQ(g.rules.size(), 1u) << g.to_string();
  EXPECT_EQ(g.lexemes.size(), 1u) << g.to_string();
}

TEST(GbnfTest, CLikeIdentifiers) {
  const Grammar g = parse(R"g(
root  ::= ident ("," " "? ident)*
ident ::= [a-zA-Z_] [a-zA-Z0-9_]{0,31}
)g");
  EXPECT_TRUE(accepts(g, "abc, _x1,Z9"));
  EXPECT_TRUE(accepts(g, std::string(32, 'a')));
  EXPECT_FALSE(accepts(g, std::string(33, 'a')));
  EXPECT_FALSE(accepts(g, "1abc"));
  EXPECT_FALSE(accepts(g, "a,,b"));
  EXPECT_FALSE(accepts(g, "a-b"));
}

TEST(GbnfTest, Recursion) {
  const Grammar balanced = parse(R"g(root ::= "(" root ")" root | "")g");
  EXPECT_TRUE(accepts(balanced, ""));
  EXPECT_TRUE(accepts(balanced, "(()())()"));
  EXPECT_FALSE(accepts(balanced, "(()"));
  EXPECT_FALSE(accepts(balanced, "())"));
  EXPECT_TRUE(accepts_prefix(balanced, "((("));
  EXPECT_FALSE(accepts_prefix(balanced, "())"));

  // Mutual recursion through a regular-looking rule: neither may be inlined.
  const Grammar mutual = parse(R"g(
root ::= list
list ::= "[" (item ("," item)*)? "]"
item ::= [0-9]+ | list
)g");
  EXPECT_TRUE(accepts(mutual, "[1,[2,[]],3]"));
  EXPECT_FALSE(accepts(mutual, "[1,[2,]]"));
  EXPECT_FALSE(accepts(mutual, "[[1]"));
  const std::string dump = mutual.to_string();
  EXPECT_NE(dump.find("list ::="), std::string::npos) << dump;
  EXPECT_NE(dump.find("item ::="), std::string::npos) << dump;
}

TEST(GbnfTest, NamesWithDigitsAndCapitals) {
  const Grammar g = parse("root ::= QA-pair-2 \"!\"\nQA-pair-2 ::= \"q\" 42\n42 ::= \"a\"");
  EXPECT_TRUE(accepts(g, "qa!"));
  EXPECT_FALSE(accepts(g, "q!"));
}

// --- differential: the lowered Grammar against the syntax tree read directly -----------------

// A direct reading of the GBNF syntax tree (no lowering, no regex): the byte offsets at which a
// match of `n` starting at `pos` can end. Exponential in general, fine for short strings and
// grammars without left recursion.
class TreeOracle {
 public:
  TreeOracle(const GbnfAst& ast, std::string_view s) : ast_(ast), s_(s) {}

  bool accepts() {
    return ends(ast_.rules[static_cast<size_t>(ast_.root)].body, 0, 0).count(s_.size()) > 0;
  }

 private:
  std::set<size_t> ends(const GbnfNode& n, size_t pos, int depth) {
    std::set<size_t> out;
    if (depth > 400) return out;  // only left recursion gets here
    switch (n.kind) {
      case GbnfNode::Kind::kLiteral:
        if (s_.substr(pos).starts_with(n.text)) out.insert(pos + n.text.size());
        break;
      case GbnfNode::Kind::kClass:
      case GbnfNode::Kind::kAny: {
        if (pos >= s_.size()) break;
        const size_t len = tokenizer::utf8::valid_sequence_length(s_, pos);
        if (len == 0) break;
        const uint32_t cp = tokenizer::utf8::decode(s_, pos, len);
        bool in = n.kind == GbnfNode::Kind::kAny;
        for (const GbnfCharRange& r : n.ranges)
          in = in || (cp >= r.lo && cp <= r.hi);
        if (in != n.negated) out.insert(pos + len);
        break;
      }
      case GbnfNode::Kind::kRef:
        out = ends(ast_.rules[static_cast<size_t>(n.rule)].body, pos, depth + 1);
        break;
      case GbnfNode::Kind::kSeq: {
        std::set<size_t> current = {pos};
        for (const GbnfNode& c : n.children) {
          std::set<size_t> next;
          for (size_t p : current)
            for (size_t e : ends(c, p, depth + 1))
              next.insert(e);
          current = std::move(next);
        }
        out = std::move(current);
        break;
      }
      case GbnfNode::Kind::kAlt:
        for (const GbnfNode& c : n.children)
          for (size_t e : ends(c, pos, depth + 1))
            out.insert(e);
        break;
      case GbnfNode::Kind::kRepeat: {
        std::set<size_t> current = {pos};
        if (n.min == 0) out.insert(pos);
        const int64_t limit = n.max < 0 ? n.min + static_cast<int64_t>(s_.size() - pos) + 1 : n.max;
        for (int64_t k = 1; k <= limit && !current.empty(); ++k) {
          std::set<size_t> next;
          for (size_t p : current)
            for (size_t e : ends(n.children[0], p, depth + 1))
              next.insert(e);
          current = std::move(next);
          if (k >= n.min) out.insert(current.begin(), current.end());
        }
        break;
      }
    }
    return out;
  }

  const GbnfAst& ast_;
  std::string_view s_;
};

// Random strings over `alphabet` (code points given as UTF-8 pieces) and mutations of `samples`,
// judged by the recognizer on the lowered grammar and by the tree oracle. Both verdicts must agree
// on every string, and each grammar must see both verdicts.
void expect_same_language(std::string_view text, const std::vector<std::string>& alphabet,
                          const std::vector<std::string>& samples, int num_random = 300) {
  SCOPED_TRACE(std::string(text));
  auto ast = parse_gbnf_ast(text);
  ASSERT_TRUE(ast.ok()) << ast.status().to_string();
  const Grammar g = parse(text);
  std::mt19937 rng(1234);
  std::vector<std::string> strings = samples;
  for (int i = 0; i < num_random; ++i) {
    std::string s;
    const int len = static_cast<int>(rng() % 9);
    for (int j = 0; j < len; ++j)
      s += alphabet[rng() % alphabet.size()];
    strings.push_back(s);
  }
  for (const std::string& sample : samples) {
    for (int i = 0; i < 20; ++i) {
      std::string s = sample;
      const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
      switch (rng() % 3) {
        case 0:
          s.insert(at, alphabet[rng() % alphabet.size()]);
          break;
        case 1:
          if (at < s.size()) s.erase(at, 1);
          break;
        default:
          s = s.substr(0, at);
          break;
      }
      if (tokenizer::utf8::is_valid(s)) strings.push_back(s);
    }
  }
  int num_accepted = 0;
  for (const std::string& s : strings) {
    const bool expected = TreeOracle(*ast, s).accepts();
    EXPECT_EQ(accepts(g, s), expected) << "string: '" << s << "'\n" << g.to_string();
    num_accepted += expected ? 1 : 0;
  }
  EXPECT_GT(num_accepted, 0);
  EXPECT_LT(num_accepted, static_cast<int>(strings.size()));
}

TEST(GbnfDifferentialTest, AgreesWithTheSyntaxTree) {
  expect_same_language(R"g(
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor ("*" factor)*
factor ::= [0-9]+ | "(" expr ")"
)g",
                       {"1", "0", "+", "-", "*", "(", ")"}, {"1+2*(3-4)", "(1)", "12*3"});
  expect_same_language(R"g(
root ::= "[" ws (v ws ("," ws v ws)*)? "]"
v    ::= "1" | "\"" [^"\\]* "\"" | root
ws   ::= [ ]*
)g",
                       {"[", "]", ",", " ", "1", "\"", "\\", "a"},
                       {"[1, [\"a\"] ,[]]", "[ ]", "[\"\"]"});
  expect_same_language(R"(root ::= "a"{2,3} ("bc"{0,2} | [x-z]+)? "d"{1,})",
                       {"a", "b", "c", "d", "x", "y", "z"}, {"aad", "aaabcbcd", "aaxyzdd"});
  expect_same_language(R"(root ::= ("ab"{2}{1,2})? ("c"?)+ [^a-c\n] .)",
                       {"a", "b", "c", "d", "\n", "\xC3\xA9", "\xF0\x9F\x98\x80"},
                       {"ababd\n", "abababababcce\xC3\xA9", "d\xF0\x9F\x98\x80"});
  expect_same_language(R"(root ::= [^\x00-\x7F]{1,2} "-" [\u00e0-\u00ff\U0001F600-\U0001F64F]*)",
                       {"a", "-", "\xC3\xA9", "\xC3\x80", "\xF0\x9F\x98\x81", "\xF0\x9F\x9A\x80"},
                       {"\xC3\xA9-\xC3\xA9\xF0\x9F\x98\x81", "\xF0\x9F\x9A\x80-"});
  expect_same_language(R"g(root ::= "(" root ")" root | "")g", {"(", ")"}, {"(()())", "()"});
  expect_same_language(R"g(
root  ::= item ("," item)*
item  ::= | "x" | "[" inner "]"
inner ::= item | "y" inner
)g",
                       {"x", "y", "[", "]", ","}, {"x,[y[x]],", "[yyy]"});
}

// --- lowering --------------------------------------------------------------------------------

TEST(GbnfLoweringTest, RegularRuleIsOneLexeme) {
  const Grammar g = parse(R"(root ::= [a-z]+ "@" [a-z]+ "." ("com" | "org"))");
  ASSERT_EQ(g.rules.size(), 1u);
  ASSERT_EQ(g.lexemes.size(), 1u);
  EXPECT_EQ(g.lexemes[0], "[a-z]+@[a-z]+\\.(?:com|org)");
  EXPECT_EQ(g.to_string(), "*root ::= /[a-z]+@[a-z]+\\.(?:com|org)/\n");
}

TEST(GbnfLoweringTest, RegularReferencesAreInlined) {
  const Grammar g = parse("root ::= word (\" \" word)*\nword ::= [a-z]+");
  EXPECT_EQ(g.to_string(), "*root ::= /[a-z]+(?: [a-z]+)*/\n");
  EXPECT_TRUE(accepts(g, "hello big world"));
  EXPECT_FALSE(accepts(g, "hello  world"));
}

TEST(GbnfLoweringTest, EmptyAlternativeBecomesOptionalGroup) {
  const Grammar g = parse("root ::= \"a\" (| \"b\" | \"c\") [xy]*");
  EXPECT_EQ(g.to_string(), "*root ::= /a(?:b|c)?[xy]*/\n");
}

TEST(GbnfLoweringTest, RegularRunsAroundARuleShareLexemes) {
  const Grammar g = parse(R"g(
root  ::= "{" ws value ws "}"
value ::= "[" value "]" | "x"
ws    ::= [ ]*
)g");
  EXPECT_NE(g.to_string().find("*root ::= /\\{[ ]*/ value /[ ]*\\}/"), std::string::npos)
      << g.to_string();
  EXPECT_TRUE(accepts(g, "{ [[x]]  }"));
  EXPECT_FALSE(accepts(g, "{ [[x] }"));
}

TEST(GbnfLoweringTest, RecursionStaysARule) {
  const Grammar g = parse(R"g(root ::= "(" root ")" | "x")g");
  EXPECT_EQ(g.to_string(), "*root ::= /\\(/ root /\\)/ | /x/\n");
}

TEST(GbnfLoweringTest, RepetitionOfARuleUsesHelperRules) {
  const Grammar g = parse(R"g(
root ::= (tree ";"){2,3}
tree ::= "x" | "(" tree ")"
)g");
  EXPECT_TRUE(accepts(g, "x;(x);"));
  EXPECT_TRUE(accepts(g, "x;(x);((x));"));
  EXPECT_FALSE(accepts(g, "x;"));
  EXPECT_FALSE(accepts(g, "x;x;x;x;"));
  EXPECT_GT(g.rules.size(), 2u);
}

TEST(GbnfLoweringTest, LargeCountedRepetitionIsNotOneLexeme) {
  // [a-z]{5000} would be ~5000 x (class states) NFA states as one regex: kept as a repetition of
  // a one-class lexeme instead.
  const Grammar g = parse(R"(root ::= [a-z]{5000} "!")");
  EXPECT_GT(g.rules.size(), 1u);
  for (const std::string& l : g.lexemes)
    EXPECT_LT(l.size(), 64u) << l;
  EXPECT_TRUE(accepts(g, std::string(5000, 'q') + "!"));
  EXPECT_FALSE(accepts(g, std::string(4999, 'q') + "!"));
  EXPECT_FALSE(accepts(g, std::string(5001, 'q') + "!"));

  const Grammar small = parse(R"(root ::= [a-z]{100} "!")");
  EXPECT_EQ(small.lexemes.size(), 1u);
}

TEST(GbnfLoweringTest, LongLiteralIsSplit) {
  const std::string text(100000, 'a');
  const Grammar g = parse("root ::= \"" + text + "b\"");
  for (const std::string& l : g.lexemes)
    EXPECT_LE(l.size(), 4096u);
  EXPECT_TRUE(accepts(g, text + "b"));
  EXPECT_FALSE(accepts(g, text));
}

TEST(GbnfLoweringTest, LongReferenceChainDoesNotRecurseDeeply) {
  // r0 ::= r1 "a", r1 ::= r2 "a", ...: 20000 rules, each regular. The analysis walks the chain
  // with an explicit stack; inlining stops at a bounded depth and the rest stays rules.
  std::string text = "root ::= r0\n";
  constexpr int kChain = 20000;
  for (int i = 0; i < kChain; ++i)
    text += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"a\"\n";
  text += "r" + std::to_string(kChain) + " ::= \"b\"\n";
  auto g = parse_gbnf(text);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(g->validate().ok());

  std::string small = "root ::= r0\n";
  for (int i = 0; i < 100; ++i)
    small += "r" + std::to_string(i) + " ::= r" + std::to_string(i + 1) + " \"a\"\n";
  small += "r100 ::= \"b\"\n";
  const Grammar inlined = parse(small);
  EXPECT_EQ(inlined.rules.size(), 1u);
  EXPECT_TRUE(accepts(inlined, "b" + std::string(100, 'a')));
  EXPECT_FALSE(accepts(inlined, "b" + std::string(99, 'a')));
}

// --- errors ----------------------------------------------------------------------------------

TEST(GbnfErrorTest, RulesAndRoot) {
  EXPECT_EQ(refused("root ::= value\n"), "gbnf: line 1 col 10: undefined rule 'value'");
  EXPECT_EQ(refused("root ::= a\na ::= \"x\" b c\nc ::= \"y\"\n"),
            "gbnf: line 2 col 11: undefined rule 'b'");
  EXPECT_EQ(refused("a ::= \"x\"\n"), "gbnf: missing rule 'root'");
  EXPECT_EQ(refused(""), "gbnf: missing rule 'root'");
  EXPECT_EQ(refused("# only a comment\n"), "gbnf: missing rule 'root'");
  EXPECT_EQ(refused("root ::= \"a\"\nroot ::= \"b\"\n"),
            "gbnf: line 2 col 1: rule 'root' is defined twice (first at line 1 col 1)");
  EXPECT_EQ(refused("root = \"a\""),
            "gbnf: line 1 col 6: expected '::=' after rule name 'root', "
            "found '='");
  EXPECT_EQ(refused("::= \"a\""), "gbnf: line 1 col 1: expected a rule name, found ':'");
  EXPECT_EQ(refused("root ::= \"a\" )"),
            "gbnf: line 1 col 14: expected a newline or the end after rule 'root', found ')'");
  // Columns count code points: "é" is one column.
  EXPECT_EQ(refused("root ::= \"\xC3\xA9\" value"), "gbnf: line 1 col 14: undefined rule 'value'");
}

TEST(GbnfErrorTest, Terminals) {
  EXPECT_EQ(refused("root ::= \"abc"), "gbnf: line 1 col 10: unterminated string literal");
  EXPECT_EQ(refused("root ::= \"a\"\nx ::= \"abc\\\""),
            "gbnf: line 2 col 7: unterminated string literal");
  EXPECT_EQ(refused("root ::= [a-z"), "gbnf: line 1 col 10: unterminated character class");
  EXPECT_EQ(refused("root ::= [a-"), "gbnf: line 1 col 10: unterminated character class");
  EXPECT_EQ(refused("root ::= [\\"), "gbnf: line 1 col 11: unexpected end of the input after '\\'");
  EXPECT_EQ(refused("root ::= []"), "gbnf: line 1 col 10: empty character class");
  EXPECT_EQ(refused("root ::= [^]"), "gbnf: line 1 col 10: empty character class");
  EXPECT_EQ(refused("root ::= [z-a]"),
            "gbnf: line 1 col 11: character range U+007A-U+0061 is reversed");
  EXPECT_EQ(refused(R"(root ::= "\q")"),
            "gbnf: line 1 col 11: unknown escape '\\' followed by 'q'");
  EXPECT_EQ(refused(R"(root ::= "\x4")"), "gbnf: line 1 col 11: escape '\\x' needs 2 hex digits");
  EXPECT_EQ(refused(R"(root ::= "\u12G4")"),
            "gbnf: line 1 col 11: escape '\\u' needs 4 hex digits");
  EXPECT_EQ(refused(R"(root ::= "\U00110000")"),
            "gbnf: line 1 col 11: escape '\\U00110000' is beyond U+10FFFF");
  EXPECT_EQ(refused(R"(root ::= "\uD800")"),
            "gbnf: line 1 col 11: escape '\\uD800' is a surrogate code point");
}

TEST(GbnfErrorTest, Operators) {
  EXPECT_EQ(refused("root ::= *"), "gbnf: line 1 col 10: '*' has nothing before it to repeat");
  EXPECT_EQ(refused("root ::= \"a\" | +"),
            "gbnf: line 1 col 16: '+' has nothing before it to repeat");
  EXPECT_EQ(refused("root ::= (?)"), "gbnf: line 1 col 11: '?' has nothing before it to repeat");
  EXPECT_EQ(refused("root ::= \"a\"{10001}"),
            "gbnf: line 1 col 14: repetition count 10001 is above the limit of 10000");
  EXPECT_EQ(refused("root ::= \"a\"{1,99999999999999999999999999999999}"),
            "gbnf: line 1 col 16: repetition count 999999999999999999999999... is above the "
            "limit of 10000");
  EXPECT_EQ(refused("root ::= \"a\"{3,2}"),
            "gbnf: line 1 col 13: repetition {3,2} has its maximum below its minimum");
  EXPECT_EQ(refused("root ::= \"a\"{,3}"), "gbnf: line 1 col 14: expected a number, found ','");
  EXPECT_EQ(refused("root ::= \"a\"{1;3}"), "gbnf: line 1 col 15: expected ',' or '}', found ';'");
  EXPECT_EQ(refused("root ::= \"a\"{1,3"),
            "gbnf: line 1 col 17: expected '}', found the end of the input");
  EXPECT_EQ(refused("root ::= (\"a\"\n\n"),
            "gbnf: line 3 col 1: expected ')' to close the group at line 1 col 10, found the end "
            "of the input");
}

TEST(GbnfErrorTest, TokenSyntaxIsRefusedByName) {
  EXPECT_EQ(refused("root ::= <[123]> \"a\""),
            "gbnf: line 1 col 10: token references ('<...>') are not supported");
  EXPECT_EQ(refused("root ::= \"a\" <think>"),
            "gbnf: line 1 col 14: token references ('<...>') are not supported");
  EXPECT_EQ(refused("root ::= !<[1]>"),
            "gbnf: line 1 col 10: token negation ('!') is not supported");
}

TEST(GbnfErrorTest, HostileInput) {
  // NUL bytes and invalid UTF-8, wherever they are.
  EXPECT_EQ(refused(std::string("root ::= \"a\0\"", 13)), "gbnf: line 1 col 12: NUL byte");
  EXPECT_EQ(refused(std::string("root ::= \"a\" # \0\n", 17)), "gbnf: line 1 col 16: NUL byte");
  EXPECT_EQ(refused("root ::= \"\xFF\""), "gbnf: line 1 col 11: invalid UTF-8 (byte 0xff)");
  EXPECT_EQ(refused("root ::= \"\xC3\""), "gbnf: line 1 col 11: invalid UTF-8 (byte 0xc3)");
  EXPECT_EQ(refused("root ::= \"\xED\xA0\x80\""),  // an encoded surrogate
            "gbnf: line 1 col 11: invalid UTF-8 (byte 0xed)");
  EXPECT_EQ(refused("root ::= \"\xC0\xAF\""),  // overlong
            "gbnf: line 1 col 11: invalid UTF-8 (byte 0xc0)");

  // Nesting: 200 groups parse, 300 are refused (no deep recursion either way).
  const auto nested = [](int depth) {
    return "root ::= " + std::string(static_cast<size_t>(depth), '(') + "\"a\"" +
           std::string(static_cast<size_t>(depth), ')');
  };
  const Grammar ok = parse(nested(200));
  EXPECT_TRUE(accepts(ok, "a"));
  EXPECT_EQ(refused(nested(300)), "gbnf: line 1 col 266: groups nested deeper than 256");
  EXPECT_EQ(refused(nested(100000)), "gbnf: line 1 col 266: groups nested deeper than 256");
  EXPECT_NE(refused("root ::= \"a\"" + std::string(1000, '?')).find("nested deeper than 256"),
            std::string::npos);
  EXPECT_NE(refused("root ::= " + std::string(100000, '(')).find("nested deeper than 256"),
            std::string::npos);

  // Size.
  EXPECT_EQ(refused("root ::= \"" + std::string(kMaxGbnfBytes, 'a') + "\""),
            "gbnf: the grammar is 1048587 bytes (limit 1048576)");

  // Repetitions of repetitions of a recursive rule: the grammar would grow past its symbol limit;
  // refused before it is built.
  std::string blowup = "root ::= x";
  for (int i = 0; i < 300; ++i)
    blowup += " r" + std::to_string(i);
  blowup += "\nx ::= \"a\" | \"(\" x \")\"\n";
  for (int i = 0; i < 300; ++i)
    blowup += "r" + std::to_string(i) + " ::= (x{10000}){10000}\n";
  EXPECT_NE(refused(blowup).find("the grammar grows beyond"), std::string::npos);
}

// --- regex_grammar and choice_grammar --------------------------------------------------------

TEST(RegexGrammarTest, OneLexeme) {
  auto g = regex_grammar("[a-c]+(x|yz)?");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_EQ(g->lexemes.size(), 1u);
  EXPECT_TRUE(accepts(*g, "abcyz"));
  EXPECT_TRUE(accepts(*g, "a"));
  EXPECT_FALSE(accepts(*g, "abcy"));
  EXPECT_TRUE(accepts_prefix(*g, "abcy"));

  auto empty = regex_grammar("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(accepts(*empty, ""));
  EXPECT_FALSE(accepts(*empty, "a"));

  auto bad = regex_grammar("a(b");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(regex_grammar("(?=a)b").ok());
}

TEST(ChoiceGrammarTest, Literals) {
  auto g = choice_grammar({"yes", "no", "", "a.b", "y\xC3\xA9s", "no"});
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(accepts(*g, "yes"));
  EXPECT_TRUE(accepts(*g, "no"));
  EXPECT_TRUE(accepts(*g, ""));
  EXPECT_TRUE(accepts(*g, "a.b"));
  EXPECT_TRUE(accepts(*g, "y\xC3\xA9s"));
  EXPECT_FALSE(accepts(*g, "axb"));
  EXPECT_FALSE(accepts(*g, "yesno"));
  EXPECT_TRUE(accepts_prefix(*g, "ye"));
  EXPECT_FALSE(accepts_prefix(*g, "x"));
}

TEST(ChoiceGrammarTest, Limits) {
  EXPECT_FALSE(choice_grammar({}).ok());
  EXPECT_FALSE(choice_grammar({"ok", "\xFF"}).ok());
  std::vector<std::string> many(100001, "x");
  auto too_many = choice_grammar(many);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.status().message(), "choice: 100001 choices (limit 100000)");
  many.resize(100000);
  for (size_t i = 0; i < many.size(); ++i)
    many[i] = std::to_string(i);
  auto most = choice_grammar(many);
  ASSERT_TRUE(most.ok()) << most.status().to_string();
  EXPECT_EQ(most->rules[0].alternatives.size(), 100000u);
}

}  // namespace
}  // namespace pagoda::structured
