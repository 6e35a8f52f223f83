// compile_regex / ByteNfa: a differential test against std::regex (ECMAScript) on ASCII
// patterns, the syntax corners, the refusals with their messages, the size limits on hostile
// patterns, and the trimming invariant. (UTF-8: utf8_test.cc.)
#include "structured/regex.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "structured/grammar.h"
#include "structured/regex_parser.h"
#include "structured/utf8_ranges.h"
#include "unit/structured/regex/regex_test_util.h"

namespace pagoda::structured {
namespace {

using test::compile_ok;
using test::expect_well_formed;

// ---- differential test against std::regex ---------------------------------------------------

// ECMAScript std::regex. libstdc++'s default executor backtracks (exponential on nested
// quantifiers such as ((a*){2,})*); its __polynomial option runs the same NFA breadth-first.
std::regex std_regex(const std::string& pattern) {
#ifdef __GLIBCXX__
  return std::regex(pattern, std::regex::ECMAScript | std::regex_constants::__polynomial);
#else
  return std::regex(pattern, std::regex::ECMAScript);
#endif
}

class PatternGen {
 public:
  explicit PatternGen(uint32_t seed) : rng_(seed) {}

  std::string pattern(int depth) {
    std::string out = sequence(depth);
    while (pick(4) == 0)
      out += "|" + sequence(depth);
    return out;
  }

  std::string subject() {
    static constexpr std::string_view kAlphabet = "abc1 .\n-_";
    std::string s;
    const int len = static_cast<int>(pick(9));
    for (int i = 0; i < len; ++i)
      s += kAlphabet[pick(static_cast<uint32_t>(kAlphabet.size()))];
    return s;
  }

  uint32_t pick(uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng_); }
  std::mt19937& rng() { return rng_; }

 private:
  std::string sequence(int depth) {
    std::string out;
    const uint32_t len = pick(4);
    for (uint32_t i = 0; i < len; ++i)
      out += item(depth);
    return out;
  }

  std::string item(int depth) {
    static const char* kAtoms[] = {
        "a",   "b",   "c",      ".",      "[ab]",   "[^a]",    "[a-c]",   "\\d",   "\\w",
        "\\s", "\\.", "[\\d.]", "[^\\w]", "\\D",    "[-a]",    "[a\\-c]", "\\x61", "[^\\n]",
        "\\S", "1",   " ",      "\\W",    "[_1-9]", "\\u0062", "[\\s\\S]"};
    std::string atom;
    if (depth > 0 && pick(4) == 0) {
      atom = (pick(2) ? "(?:" : "(") + pattern(depth - 1) + ")";
    } else {
      atom = kAtoms[pick(sizeof(kAtoms) / sizeof(kAtoms[0]))];
    }
    static const char* kQuantifiers[] = {"",    "",      "",      "*",    "+",   "?",
                                         "{2}", "{0,2}", "{1,3}", "{2,}", "{0}", "{1,1}"};
    std::string q = kQuantifiers[pick(sizeof(kQuantifiers) / sizeof(kQuantifiers[0]))];
    if (!q.empty() && pick(4) == 0) q += "?";  // lazy
    return atom + q;
  }

  std::mt19937 rng_;
};

// A random accepted string of `nfa` made of ASCII bytes (empty if the walk dead-ends).
std::string ascii_walk(const ByteNfa& nfa, PatternGen& gen) {
  if (nfa.starts.empty()) return {};
  std::string out;
  int32_t s = nfa.starts[0];
  for (int steps = 0; steps < 12; ++steps) {
    const ByteNfa::State& st = nfa.states[static_cast<size_t>(s)];
    if (st.accepting && gen.pick(3) == 0) return out;
    std::vector<const ByteNfa::Edge*> ascii;
    for (const ByteNfa::Edge& e : st.edges)
      if (e.lo < 0x80) ascii.push_back(&e);
    if (ascii.empty()) return out;
    const ByteNfa::Edge& e = *ascii[gen.pick(static_cast<uint32_t>(ascii.size()))];
    const uint8_t hi = std::min<uint8_t>(e.hi, 0x7F);
    out += static_cast<char>(e.lo + gen.pick(static_cast<uint32_t>(hi - e.lo + 1)));
    s = e.target;
  }
  return out;
}

TEST(RegexDifferential, AgreesWithStdRegexOnAsciiPatterns) {
  PatternGen gen(20240611);
  size_t num_checked = 0, num_matches = 0;
  for (int p = 0; p < 2000; ++p) {
    const std::string pattern = gen.pattern(2);
    const ByteNfa nfa = compile_ok(pattern);
    expect_well_formed(nfa, pattern);
    const std::regex re = std_regex(pattern);
    std::vector<std::string> subjects;
    for (int i = 0; i < 40; ++i)
      subjects.push_back(gen.subject());
    for (int i = 0; i < 20; ++i)
      subjects.push_back(ascii_walk(nfa, gen));
    for (const std::string& s : subjects) {
      const bool expected = std::regex_match(s, re);
      ASSERT_EQ(nfa.full_match(s), expected)
          << "pattern /" << pattern << "/ subject \"" << s << "\"";
      ++num_checked;
      num_matches += expected;
    }
  }
  EXPECT_GT(num_matches, num_checked / 10);  // both verdicts are well represented
  EXPECT_LT(num_matches, num_checked * 9 / 10);
  std::printf("checked %zu (pattern, subject) pairs, %zu matches\n", num_checked, num_matches);
}

TEST(RegexDifferential, HandwrittenPatterns) {
  const char* patterns[] = {
      "",
      "a|",
      "(a|ab)(c|bcd)(d*)",
      "(a*)*b",
      "(a*)+",
      "(a?){3}",
      "(?:a|b)*?c",
      "a{2,3}?b{0,}",
      "[a-c]{1,2}(1|\\d\\d)",
      "(\\w+\\s?)+",
      "\\d{3}-\\d{4}",
      "[+-]?\\d+(\\.\\d+)?([eE][+-]?\\d+)?",
      "^-?(0|[1-9]\\d*)$",
      "(ab|a)(bc|c)?",
      "((a|b)(c|d)?)*",
      "[^\\d\\s]+",
      "x{0}y",
      "\\{\\}\\[\\]\\(\\)\\|\\^\\$\\*\\+\\?\\.\\/\\\\",
  };
  PatternGen gen(7);
  for (const char* pattern : patterns) {
    const ByteNfa nfa = compile_ok(pattern);
    expect_well_formed(nfa, pattern);
    const std::regex re = std_regex(pattern);
    for (int i = 0; i < 300; ++i) {
      const std::string s = i % 3 == 0 ? ascii_walk(nfa, gen) : gen.subject();
      ASSERT_EQ(nfa.full_match(s), std::regex_match(s, re))
          << "/" << pattern << "/ \"" << s << "\"";
    }
  }
}

TEST(Regex, LiteralsAndAnchors) {
  EXPECT_TRUE(compile_ok("abc").full_match("abc"));
  EXPECT_FALSE(compile_ok("abc").full_match("abcd"));
  EXPECT_FALSE(compile_ok("abc").full_match("ab"));
  EXPECT_TRUE(compile_ok("^abc$").full_match("abc"));
  EXPECT_TRUE(compile_ok("^$").full_match(""));
  EXPECT_TRUE(compile_ok("").full_match(""));
  EXPECT_FALSE(compile_ok("").full_match("a"));
  EXPECT_TRUE(compile_ok("a\\$").full_match("a$"));
  EXPECT_TRUE(compile_ok("a\\\\$").full_match("a\\"));
  EXPECT_TRUE(compile_ok("a|b$").full_match("a"));
  EXPECT_TRUE(compile_ok("\\n\\r\\t\\f\\v\\0").full_match(std::string("\n\r\t\f\v\0", 6)));
  EXPECT_TRUE(compile_ok("\\x41\\cJ").full_match("A\n"));
  EXPECT_TRUE(compile_ok("[\\b]").full_match("\b"));
  EXPECT_TRUE(compile_ok("(?<year>\\d{4})-(?P<m>\\d\\d)").full_match("2024-06"));
  EXPECT_TRUE(compile_ok("a{1}{").full_match("a{"));
  EXPECT_TRUE(compile_ok("a{b").full_match("a{b"));
  EXPECT_TRUE(compile_ok("a{1,x}").full_match("a{1,x}"));
  EXPECT_TRUE(compile_ok("}a]").full_match("}a]"));
  EXPECT_TRUE(compile_ok("[^]").full_match("\n"));
  EXPECT_TRUE(compile_ok("[[]").full_match("["));
  EXPECT_TRUE(compile_ok("[a-]").full_match("-"));
  EXPECT_TRUE(compile_ok("[a-b-c]").full_match("-"));
  EXPECT_TRUE(compile_ok("[\\d-]").full_match("-"));
}

TEST(Regex, EscapedTextMatchesItself) {
  const std::string texts[] = {"a.b*c", "{\"key\": [1, 2]}", "x^y$z|(w)?", "tab\there\x01", "\\/-",
                               "é€😀 ok"};
  for (const std::string& t : texts) {
    const ByteNfa nfa = compile_ok(regex_escape(t));
    EXPECT_TRUE(nfa.full_match(t)) << t;
    EXPECT_FALSE(nfa.full_match(t + "x")) << t;
  }
}

// ---- refusals --------------------------------------------------------------------------------

TEST(RegexRefusals, NameTheConstructAndOffset) {
  struct Case {
    std::string pattern;
    const char* message;
  };
  const Case cases[] = {
      {"(a)\\1", "backreference '\\1' at offset 3"},
      {"(?<n>a)\\k<n>", "named backreference '\\k' at offset 7"},
      {"(?P<n>a)(?P=n)", "named backreference '(?P=' at offset 8"},
      {"a(?=b)", "lookahead '(?=' at offset 1"},
      {"a(?!b)", "negative lookahead '(?!' at offset 1"},
      {"(?<=a)b", "lookbehind '(?<=' at offset 0"},
      {"(?<!a)b", "negative lookbehind '(?<!' at offset 0"},
      {"\\bword", "word boundary '\\b' at offset 0"},
      {"a\\B", "word boundary '\\B' at offset 1"},
      {"a^b", "anchor '^' at offset 1"},
      {"a$b", "anchor '$' at offset 1"},
      {"(a$)", "anchor '$' at offset 2"},
      {"(^a)", "anchor '^' at offset 1"},
      {"a|^b", "anchor '^' at offset 2"},
      {"\\Aa", "anchor '\\A' at offset 0"},
      {"a*+", "possessive quantifier at offset 2"},
      {"a{2}+", "possessive quantifier at offset 4"},
      {"(?>a)", "atomic group '(?>' at offset 0"},
      {"(?i)abc", "inline flag group '(?flags' at offset 0"},
      {"(?i:abc)", "inline flag group"},
      {"(?-i)a", "inline flag group"},
      {"(?#c)a", "comment group"},
      {"(?(1)a|b)", "conditional group"},
      {"(?R)", "recursion"},
      {"(?<1a>x)", "bad group name at offset 0"},
      {"(ab", "unbalanced '(' at offset 0"},
      {"a(b(c)", "unbalanced '(' at offset 1"},
      {"ab)", "unbalanced ')' at offset 2"},
      {"[ab", "unbalanced '[' at offset 0"},
      {"a[b\\]", "unbalanced '[' at offset 1"},
      {"*a", "quantifier at offset 0 has nothing to repeat"},
      {"a|+b", "quantifier at offset 2 has nothing to repeat"},
      {"(?:{2})", "quantifier at offset 3 has nothing to repeat"},
      {"^*", "quantifier at offset 1 has nothing to repeat"},
      {"a**", "quantifier at offset 2 follows another quantifier"},
      {"a{2}{3}", "quantifier at offset 4 follows another quantifier"},
      {"a???", "quantifier at offset 3 follows another quantifier"},
      {"a{5,2}", "{5,2} at offset 1 has min > max"},
      {"a{100001}", "repetition count in {100001} at offset 1 exceeds 100000"},
      {"a{1,999999999999999999999}", "exceeds 100000"},
      {"a{,5}", "'{,' at offset 1 is ambiguous"},
      {"\\q", "bad escape '\\q' at offset 0"},
      {"a\\", "trailing '\\' at offset 1"},
      {"\\xZZ", "bad hex escape at offset 0"},
      {"\\x4", "bad hex escape at offset 0"},
      {"\\u12", "bad hex escape at offset 0"},
      {"\\u{110000}", "above U+10FFFF"},
      {"\\u{}", "bad hex escape"},
      {"\\uD800", "lone surrogate in escape at offset 0"},
      {"\\u{DFFF}", "lone surrogate"},
      {"\\01", "octal escape"},
      {"\\p{L}", "Unicode property escape '\\p' at offset 0"},
      {"\\c1", "bad escape '\\c'"},
      {"\\é", "bad escape at offset 0"},
      {"[z-a]", "class range out of order at offset 1"},
      {"[\\d-z]", "class escape as a range end at offset 1"},
      {"[[:alpha:]]", "POSIX class '[:' at offset 1"},
      {std::string("a\xff"), "invalid UTF-8 at offset 1"},
      {std::string("\xc3"), "invalid UTF-8 at offset 0"},
      {std::string("\xed\xa0\x80"), "invalid UTF-8 at offset 0"},
      {std::string("\xc0\xaf"), "invalid UTF-8 at offset 0"},
  };
  for (const Case& c : cases) {
    Result<ByteNfa> r = compile_regex(c.pattern);
    ASSERT_FALSE(r.ok()) << c.pattern;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.pattern;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << c.pattern << " → " << r.status().message();
    EXPECT_EQ(r.status().message().rfind("regex: ", 0), 0u) << r.status().message();
  }
}

TEST(RegexRefusals, HostileSizesFailByLimit) {
  auto expect_limit = [](const std::string& pattern, const char* message,
                         const RegexLimits& limits = {}) {
    Result<ByteNfa> r = compile_regex(pattern, limits);
    ASSERT_FALSE(r.ok()) << pattern.substr(0, 40);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status().message();
  };
  expect_limit("(a{1000}){1000}", "too many states: the part at offset 9");
  expect_limit("((a{100000}){100000}){100000}", "too many states: the part at offset 12");
  expect_limit(".{100000}", "too many states");
  expect_limit("[acegikmoqsuwyACEGIKMOQSUWY]{100000}",
               "too many transitions: the part at offset 28");
  std::string optionals;  // a?a?a?...: each position's closure reaches every later one
  for (int i = 0; i < 4000; ++i)
    optionals += "a?";
  expect_limit(optionals, "too many transitions once empty moves are removed");
  // A repeated operand that matches "" is made to consume a byte first: linear, not quadratic.
  const ByteNfa many_optional = compile_ok("(a?){50000}");
  EXPECT_LE(many_optional.states.size(), 50001u);
  EXPECT_TRUE(many_optional.full_match(std::string(50000, 'a')));
  EXPECT_FALSE(many_optional.full_match(std::string(50001, 'a')));
  EXPECT_TRUE(compile_ok("(a?b?){3}").full_match("abba"));
  EXPECT_FALSE(compile_ok("(a?b?){3}").full_match("abbaba"));
  EXPECT_TRUE(compile_ok("(a*|b)+").full_match(""));
  EXPECT_TRUE(compile_ok("(a*|b){2,}c").full_match("c"));
  expect_limit(std::string(70000, 'a'), "pattern of 70000 bytes is longer than the limit of 65536");
  expect_limit(std::string(300, '(') + std::string(300, ')'), "nested deeper than 256");
  RegexLimits small;
  small.max_nfa_states = 100;
  expect_limit("a{200}", "(limit 100)", small);
  small.max_pattern_bytes = 3;
  expect_limit("abcd", "longer than the limit of 3", small);
  // Just under the limits still works.
  EXPECT_TRUE(compile_ok(std::string(256, '(') + "a" + std::string(256, ')')).full_match("a"));
  EXPECT_TRUE(compile_ok("a{100000}").full_match(std::string(100000, 'a')));
  EXPECT_TRUE(compile_ok("(?:ab){2,}").full_match("ababab"));
}

// ---- trimming and empty languages -------------------------------------------------------------

TEST(RegexTrim, EmptyLanguages) {
  for (const char* p : {"a[]b", "[^\\s\\S]", "[]", "[]*a[]", "(a|[])[]", "[^\\d\\D]+", "[]{1,3}"}) {
    const ByteNfa nfa = compile_ok(p);
    EXPECT_TRUE(nfa.empty_language()) << p;
    EXPECT_TRUE(nfa.states.empty()) << p;
    EXPECT_FALSE(nfa.full_match("")) << p;
    EXPECT_FALSE(nfa.full_match("ab")) << p;
  }
  // Empty classes that can be skipped leave a non-empty language.
  for (const char* p : {"a[]*b", "a[]?b", "a(?:[]|)b", "a[]{0}b", "a[]{0,3}b"}) {
    const ByteNfa nfa = compile_ok(p);
    EXPECT_FALSE(nfa.empty_language()) << p;
    EXPECT_TRUE(nfa.full_match("ab")) << p;
    expect_well_formed(nfa, p);
  }
}

TEST(RegexTrim, EveryStateReachesAcceptance) {
  const char* patterns[] = {
      "a(b|[]c)d",
      "(x[]|y)*z",
      "[^\"\\\\\\x00-\\x1f]{0,200}",
      "\"([^\"\\\\]|\\\\[\"\\\\/bfnrt]|\\\\u[0-9a-fA-F]{4})*\"",
      "\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})",
      "[\\u0000-\\u{10FFFF}]*",
      ".+é?",
      "(a|b|c|d|e|f)+",
  };
  for (const char* p : patterns) {
    const ByteNfa nfa = compile_ok(p);
    EXPECT_FALSE(nfa.empty_language()) << p;
    expect_well_formed(nfa, p);
  }
}

TEST(RegexTrim, SmallForCommonPatterns) {
  // A negated class shares its continuation-byte suffixes: a handful of states, not dozens.
  const ByteNfa not_quote = compile_ok("[^\"]");
  EXPECT_LE(not_quote.states.size(), 9u);
  const ByteNfa str = compile_ok("[^\"\\\\\\x00-\\x1f]{0,200}");
  EXPECT_LE(str.states.size(), 200u * 8 + 1);
  // Touching ranges to one target are merged: [a-cd-f] is one edge.
  const ByteNfa merged = compile_ok("[a-cd-f]|[g-z]");
  ASSERT_EQ(merged.starts.size(), 1u);
  EXPECT_EQ(merged.states[static_cast<size_t>(merged.starts[0])].edges.size(), 1u);
}

TEST(RegexParser, AstShapes) {
  Result<RegexAst> ast = parse_regex("a|bc*");
  ASSERT_TRUE(ast.ok());
  const RegexNode& root = ast->nodes[static_cast<size_t>(ast->root)];
  EXPECT_EQ(root.kind, RegexNode::Kind::kAlt);
  ASSERT_EQ(root.children.size(), 2u);
  for (size_t i = 0; i < ast->nodes.size(); ++i)
    for (int32_t c : ast->nodes[i].children)
      EXPECT_LT(static_cast<size_t>(c), i);  // children come first
  Result<RegexAst> cls = parse_regex("[^a]");
  ASSERT_TRUE(cls.ok());
  const RegexNode& set = cls->nodes[static_cast<size_t>(cls->root)];
  ASSERT_EQ(set.ranges.size(), 2u);
  EXPECT_EQ(set.ranges[0], (CodePointRange{0, 'a' - 1}));
  EXPECT_EQ(set.ranges[1], (CodePointRange{'a' + 1, kMaxCodePoint}));
}

}  // namespace
}  // namespace pagoda::structured
