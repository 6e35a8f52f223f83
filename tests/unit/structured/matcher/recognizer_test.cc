// The parser's language is exactly the grammar's: ambiguity between a lexeme ending and going on,
// nullable rules and lexemes, recursion, and the compile-time clean-ups.
#include "structured/recognizer.h"

#include <gtest/gtest.h>

#include "unit/structured/matcher/test_grammars.h"

namespace pagoda::structured {
namespace {

bool accepts(const Grammar& g, std::string_view text) {
  auto r = grammar_accepts(g, text);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() && *r;
}

bool accepts_prefix(const Grammar& g, std::string_view text) {
  auto r = grammar_accepts_prefix(g, text);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() && *r;
}

TEST(Recognizer, LexemeMayEndOrGoOn) {
  // /[0-9]+/ then /[0-9]/: every split of the digits is tried, so "12" parses as "1" "2".
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {b.lexeme("[0-9]+"), b.lexeme("[0-9]")});
  const Grammar g = std::move(b).build(root).value();
  EXPECT_FALSE(accepts(g, "1"));
  EXPECT_TRUE(accepts(g, "12"));
  EXPECT_TRUE(accepts(g, "12345"));
  EXPECT_FALSE(accepts(g, "12a"));
  EXPECT_TRUE(accepts_prefix(g, "1"));
  EXPECT_FALSE(accepts_prefix(g, "a"));
}

TEST(Recognizer, NullableRulesAndEmptyLexemes) {
  // root ::= /a*/ opt /b*/ "c"   opt ::= "" | "x"
  GrammarBuilder b;
  const Symbol opt = b.optional("opt", {b.literal("x")});
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {b.lexeme("a*"), opt, b.lexeme("b*"), b.literal("c")});
  const Grammar g = std::move(b).build(root).value();
  for (const char* yes : {"c", "ac", "aaxbbc", "xc", "bc", "aabc"})
    EXPECT_TRUE(accepts(g, yes)) << yes;
  for (const char* no : {"", "a", "xxc", "ca", "bac"})
    EXPECT_FALSE(accepts(g, no)) << no;
  // The empty sentence: a grammar of only nullable parts.
  GrammarBuilder e;
  const int32_t r = e.add_rule("root");
  e.add_alternative(r, {e.lexeme("a*"), e.lexeme("b?")});
  const Grammar ge = std::move(e).build(r).value();
  EXPECT_TRUE(accepts(ge, ""));
  EXPECT_TRUE(accepts(ge, "aab"));
  EXPECT_FALSE(accepts(ge, "ba"));
}

TEST(Recognizer, Recursion) {
  // p ::= "" | "(" p ")" p     (balanced parentheses)
  GrammarBuilder b;
  const int32_t p = b.add_rule("p");
  b.add_alternative(p, {});
  b.add_alternative(p, {b.literal("("), b.rule(p), b.literal(")"), b.rule(p)});
  const Grammar g = std::move(b).build(p).value();
  for (const char* yes : {"", "()", "(())", "()()", "(()())(())"})
    EXPECT_TRUE(accepts(g, yes)) << yes;
  for (const char* no : {"(", ")", "(()", "())(", "(a)"})
    EXPECT_FALSE(accepts(g, no)) << no;
  EXPECT_TRUE(accepts_prefix(g, "((("));
  EXPECT_FALSE(accepts_prefix(g, "())"));
}

TEST(Recognizer, LeftAndRightRecursiveRepetition) {
  GrammarBuilder b;
  const Symbol item = b.lexeme("[a-z]+");
  const Symbol list = b.sequence("list", {item, b.star("rest", {b.literal(","), item})});
  const Grammar g = std::move(b).build(list.id).value();
  EXPECT_TRUE(accepts(g, "a"));
  EXPECT_TRUE(accepts(g, "ab,cd,e"));
  EXPECT_FALSE(accepts(g, "ab,"));
  EXPECT_FALSE(accepts(g, ",ab"));
  GrammarBuilder r;
  auto rep = r.repeat("rep", {r.literal("ab")}, 2, 4);
  ASSERT_TRUE(rep.ok());
  const Grammar gr = std::move(r).build(rep->id).value();
  EXPECT_FALSE(accepts(gr, "ab"));
  EXPECT_TRUE(accepts(gr, "abab"));
  EXPECT_TRUE(accepts(gr, "ababab"));
  EXPECT_TRUE(accepts(gr, "abababab"));
  EXPECT_FALSE(accepts(gr, "ababababab"));
}

TEST(Recognizer, Json) {
  const Grammar g = testing::json_value_grammar();
  for (const char* yes :
       {"{}", "[]", "1", "-0.5e+10", "\"a\\u00e9\\n\"",
        "{\"a\": [1, 2, {\"b\": null}], \"c\": true}", " [ ] ", "\"\xc3\xa9\xf0\x9f\x98\x80\""})
    EXPECT_TRUE(accepts(g, yes)) << yes;
  for (const char* no : {"{", "[1,]", "01", "{\"a\"}", "\"\x01\"", "tru", "{\"a\":1,}", "\"\xc3\""})
    EXPECT_FALSE(accepts(g, no)) << no;
  EXPECT_TRUE(accepts_prefix(g, "{\"a\": [1, 2"));
  EXPECT_TRUE(accepts_prefix(g, "\"\xf0\x9f"));  // a code point split across bytes
  EXPECT_FALSE(accepts_prefix(g, "\"\xf0\x28"));
}

TEST(Recognizer, UnproductivePartsAreDroppedOrRefused) {
  // loop ::= "a" loop  derives no finite text; root ::= "b" | loop  keeps only "b".
  GrammarBuilder b;
  const int32_t loop = b.add_rule("loop");
  b.add_alternative(loop, {b.literal("a"), b.rule(loop)});
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {b.literal("b")});
  b.add_alternative(root, {b.rule(loop)});
  const Grammar g = std::move(b).build(root).value();
  EXPECT_TRUE(accepts(g, "b"));
  EXPECT_FALSE(accepts_prefix(g, "a"));
  // Nothing derivable at all: refused when compiled.
  GrammarBuilder n;
  const int32_t only = n.add_rule("only");
  n.add_alternative(only, {n.literal("a"), n.rule(only)});
  auto r = grammar_accepts(std::move(n).build(only).value(), "a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("derives nothing"), std::string::npos);
}

TEST(Recognizer, BadLexemeIsRefusedWithItsText) {
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {b.lexeme("a(?=b)")});
  auto r = grammar_accepts(std::move(b).build(root).value(), "a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("a(?=b)"), std::string::npos) << r.status().message();
}

TEST(Recognizer, InvalidGrammarIsRefused) {
  Grammar g;
  g.rules.push_back(Rule{"root", {{Symbol{Symbol::Kind::kRule, 7}}}});
  EXPECT_FALSE(grammar_accepts(g, "").ok());
  Grammar empty;
  EXPECT_FALSE(grammar_accepts(empty, "").ok());
}

}  // namespace
}  // namespace pagoda::structured
