// Matcher::fill_mask against the brute-force mask (mask_oracle.h) along random walks through
// small grammars over a synthetic vocabulary with the hard cases: tokens spanning lexeme
// boundaries (`",`, `":`, `1}`), UTF-8 code points split across tokens, an EOS token.
#include "structured/matcher.h"

#include <random>

#include <gtest/gtest.h>

#include "unit/structured/matcher/mask_oracle.h"
#include "unit/structured/matcher/test_grammars.h"

namespace pagoda::structured {
namespace {

std::shared_ptr<const TokenTable> synthetic_table(int32_t* eos) {
  std::vector<std::string> pieces;
  for (int c = 0x20; c < 0x7f; ++c)
    pieces.push_back(std::string(1, static_cast<char>(c)));
  for (const char* p :
       {"{\"", "\":", "\": ", "\",", "\"}", "\"]", "1}", "12", "3,", "0.", "e+", "true", "null",
        "false", " \"", "\n", "\n  ", "ab", "abc\"", "\":\"", "},{", "[{", "\\n", "\\u00", "\xc3",
        "\xa9", "\xc3\xa9", "\xf0\x9f", "\x98\x80", "\xf0\x9f\x98\x80", "\xe4\xb8", "\xad",
        "\xe4\xb8\xad\"", "\xc3\xa9\",", "\x80", "\xff",
        // longer than a counted string's chain; three lexemes in one token
        "abcdefgh", "hello world", "a b c d e f g h i j k l m n o p q", "\",\"", "1,2,",
        "\"a\":1,"})
    pieces.push_back(p);
  pieces.push_back("");  // a control token: no bytes, never allowed
  *eos = static_cast<int32_t>(pieces.size());
  pieces.push_back("</s>");
  return TokenTable::from_pieces(std::move(pieces), {*eos});
}

void random_walks(const Grammar& grammar, int num_walks, int max_steps) {
  int32_t eos = 0;
  auto table = synthetic_table(&eos);
  auto compiled = CompiledGrammar::compile(grammar, table);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  std::mt19937 rng(1234);
  for (int walk = 0; walk < num_walks; ++walk) {
    Matcher matcher(*compiled);
    std::string prefix;
    std::vector<uint64_t> mask(table->num_mask_words());
    for (int step = 0; step < max_steps; ++step) {
      matcher.fill_mask(mask);
      const std::vector<uint64_t> expected = testing::brute_force_mask(*compiled, prefix);
      for (int32_t t = 0; t < table->vocab_size(); ++t) {
        ASSERT_EQ(mask_allows(mask, t), mask_allows(expected, t))
            << "token " << t << " '" << table->bytes(t) << "' after '" << prefix << "'";
      }
      std::vector<int32_t> choices;
      for (int32_t t = 0; t < table->vocab_size(); ++t) {
        if (mask_allows(mask, t)) choices.push_back(t);
      }
      ASSERT_FALSE(choices.empty()) << prefix;
      // Prefer continuing: end only when nothing else is allowed or by chance late.
      int32_t pick = choices[std::uniform_int_distribution<size_t>(0, choices.size() - 1)(rng)];
      if (pick == eos && choices.size() > 1 && step < max_steps / 2) {
        pick = choices[0] == eos ? choices[1] : choices[0];
      }
      ASSERT_TRUE(matcher.accept_token(pick).ok());
      if (pick == eos) {
        EXPECT_TRUE(matcher.is_finished());
        matcher.fill_mask(mask);
        for (int32_t t = 0; t < table->vocab_size(); ++t)
          EXPECT_EQ(mask_allows(mask, t), t == eos);
        break;
      }
      prefix += table->bytes(pick);
    }
  }
}

TEST(Matcher, MaskEqualsBruteForceOnJson) {
  random_walks(testing::json_value_grammar(), 30, 40);
}

TEST(Matcher, MaskEqualsBruteForceOnAmbiguousLexemes) {
  // numbers separated by optional spaces, where a digit run may end anywhere: "12" "3".
  GrammarBuilder b;
  const Symbol num = b.lexeme("[0-9]+");
  const Symbol list = b.sequence("list", {num, b.star("more", {b.lexeme(" ?"), num})});
  const Symbol tail = b.lexeme("[a-z]{0,3}\"?");
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {list, tail});
  random_walks(std::move(b).build(root).value(), 20, 30);
}

TEST(Matcher, MaskEqualsBruteForceOnUtf8Strings) {
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {b.literal("\""), b.lexeme("[^\"a-z]{1,6}"), b.literal("\",")});
  random_walks(std::move(b).build(root).value(), 30, 12);
}

TEST(Matcher, MaskEqualsBruteForceOnCountedStrings) {
  // A string body of bounded length: its lexer states map the printable bytes along a finite
  // chain (token sets split by byte class, with the long pure tokens lexed one by one) that
  // may end after 2 to 9 bytes, so tokens like `abc"` and `","` cross its end.
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  const Symbol body = b.lexeme("[^\"\\\\]{2,9}");
  const Symbol item = b.sequence("item", {b.literal("\""), body, b.literal("\"")});
  b.add_alternative(root,
                    {b.literal("["), item, b.star("more", {b.literal(","), item}), b.literal("]")});
  random_walks(std::move(b).build(root).value(), 30, 20);
}

TEST(Matcher, MaskEqualsBruteForceOnAcceptingClassLoop) {
  // A lexeme that accepts at every length and loops on a large class (`[ -~]+` then digits):
  // every token may end it anywhere, so roots sit right below the trie's root.
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {b.lexeme("[ -z]+"), b.literal("|"), b.lexeme("[0-9,]+"),
                           b.star("tail", {b.literal(":"), b.lexeme("[ -9]+")})});
  random_walks(std::move(b).build(root).value(), 20, 20);
}

TEST(Matcher, RejectsDisallowedTokensAndKeepsState) {
  int32_t eos = 0;
  auto table = synthetic_table(&eos);
  GrammarBuilder b;
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {b.literal("ab")});
  auto compiled = CompiledGrammar::compile(std::move(b).build(root).value(), table);
  ASSERT_TRUE(compiled.ok());
  Matcher m(*compiled);
  const int32_t tok_b = 'b' - 0x20, tok_a = 'a' - 0x20;
  EXPECT_FALSE(m.accept_token(tok_b).ok());
  EXPECT_FALSE(m.accept_token(eos).ok());  // cannot end before "ab"
  EXPECT_TRUE(m.accept_token(tok_a).ok());
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept_token(tok_b).ok());
  EXPECT_TRUE(m.can_end());
  std::vector<uint64_t> mask(table->num_mask_words());
  m.fill_mask(mask);
  for (int32_t t = 0; t < table->vocab_size(); ++t)
    EXPECT_EQ(mask_allows(mask, t), t == eos) << t;  // only the end is left
  EXPECT_TRUE(m.accept_token(eos).ok());
  EXPECT_TRUE(m.is_finished());
  EXPECT_FALSE(m.accept_token(tok_a).ok());
}

}  // namespace
}  // namespace pagoda::structured
