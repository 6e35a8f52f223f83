// Pre-tokenizer splits worked out by hand from the llama.cpp regex lists, the pattern translation,
// and a coverage property (every byte in exactly one non-empty word) for every known name.
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace pagoda::tokenizer {
namespace {

std::vector<std::string> split(std::string_view pre, const std::string& text) {
  auto p = PreTokenizer::create(pre);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  if (!p.ok()) return {};
  std::vector<ByteRange> ranges;
  (*p)->split(text, ranges);
  std::vector<std::string> words;
  for (const auto& [b, e] : ranges)
    words.push_back(text.substr(b, e - b));
  return words;
}

using Words = std::vector<std::string>;

TEST(PreTokenizerTest, Gpt2) {
  EXPECT_EQ(split("gpt-2", "Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(split("gpt-2", "  Hello"), (Words{" ", " Hello"}));
  EXPECT_EQ(split("gpt-2", "I've 123abc"), (Words{"I", "'ve", " 123", "abc"}));
  EXPECT_EQ(split("gpt-2", "a\n\nb"), (Words{"a", "\n", "\n", "b"}));
  EXPECT_EQ(split("gpt-2", "ab  "), (Words{"ab", "  "}));
  EXPECT_EQ(split("gpt-2", "h\xC3\xA9llo w\xC3\xB6rld"), (Words{"h\xC3\xA9llo", " w\xC3\xB6rld"}));
  EXPECT_EQ(split("gpt-2",
                  "a\xC2\xA0"
                  "b"),
            (Words{"a", "\xC2\xA0", "b"}));  // NBSP is \s
  EXPECT_EQ(split("gpt-2", "x!!?y"), (Words{"x", "!!?", "y"}));
}

TEST(PreTokenizerTest, Llama3) {
  EXPECT_EQ(split("llama-bpe", "123456"), (Words{"123", "456"}));
  EXPECT_EQ(split("llama-bpe", "Hello\n\nworld"), (Words{"Hello", "\n\n", "world"}));
  EXPECT_EQ(split("llama-bpe", "I'VE"), (Words{"I", "'VE"}));
  EXPECT_EQ(split("llama-bpe", "a ,b"), (Words{"a", " ,", "b"}));
  EXPECT_EQ(split("llama-bpe", "(x"), (Words{"(x"}));
}

TEST(PreTokenizerTest, Qwen2SplitsDigits) {
  EXPECT_EQ(split("qwen2", "a123"), (Words{"a", "1", "2", "3"}));
}

TEST(PreTokenizerTest, DeepseekCoderAppliesRegexesInSequence) {
  EXPECT_EQ(split("deepseek-coder", "a\nb 12"), (Words{"a", "\n", "b", " ", "1", "2"}));
}

TEST(PreTokenizerTest, DeepseekLlm) {
  // "[\r\n]" first, then letters, punctuation, "\s+$" on what is left of each piece.
  EXPECT_EQ(split("deepseek-llm", "ab  "), (Words{"ab", "  "}));
  EXPECT_EQ(split("deepseek-llm",
                  "Ab,\n \xE4\xB8\xAD"
                  "1"),
            (Words{"Ab", ",", "\n", " ", "\xE4\xB8\xAD", "1"}));
}

TEST(PreTokenizerTest, DefaultAndFalconPunctuationAndDigits) {
  EXPECT_EQ(split("default", "a,b"), (Words{"a", ",", "b"}));
  EXPECT_EQ(split("falcon", "1234"), (Words{"123", "4"}));
  EXPECT_EQ(split("default", "1234"), (Words{"123", "4"}));
}

TEST(PreTokenizerTest, InvalidUtf8BytesAreWordsOfTheirOwn) {
  EXPECT_EQ(split("gpt-2",
                  "ab\xFF"
                  "cd"),
            (Words{"ab", "\xFF", "cd"}));
  EXPECT_EQ(split("gpt-2", "\xE2\x82"), (Words{"\xE2", "\x82"}));
}

TEST(PreTokenizerTest, UnknownNameFallsBackToDefault) {
  EXPECT_FALSE(PreTokenizer::is_known("no-such-pre"));
  EXPECT_TRUE(PreTokenizer::is_known("qwen2"));
  EXPECT_EQ(split("no-such-pre", "a,b"), split("default", "a,b"));
}

TEST(PreTokenizerTest, PatternTranslation) {
  const std::string ws =
      "\\t\\n\\x{0B}\\f\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}"
      "\\x{205F}\\x{3000}";
  EXPECT_EQ(PreTokenizer::to_pcre2("\\s+$"), "[" + ws + "]+\\z");
  EXPECT_EQ(PreTokenizer::to_pcre2("[^\\s\\p{L}]"), "[^" + ws + "\\p{L}]");
  EXPECT_EQ(PreTokenizer::to_pcre2("\\s+(?!\\S)"), "[" + ws + "]+(?![^" + ws + "])");
  EXPECT_EQ(PreTokenizer::to_pcre2("a\\$[$]"), "a\\$[$]");
  EXPECT_EQ(PreTokenizer::to_pcre2("[]a]$"), "[]a]\\z");
}

TEST(PreTokenizerTest, WordsCoverEveryByteForEveryName) {
  const char* names[] = {"default", "llama-bpe", "deepseek-llm", "deepseek-v3", "deepseek-coder",
                         "falcon",  "starcoder", "gpt-2",        "qwen2",       "poro-chat",
                         "viking",  "tekken",    "gpt-4o",       "chameleon",   "chatglm-bpe"};
  const std::vector<std::string> alphabet = {"a",
                                             "Z",
                                             "7",
                                             " ",
                                             "\n",
                                             "\r",
                                             "\t",
                                             "'",
                                             "s",
                                             ",",
                                             "$",
                                             "<",
                                             "\xC3\xA9",
                                             "\xE4\xB8\xAD",
                                             "\xF0\x9F\xA6\x99",
                                             "\xC2\xA0",
                                             "\xE3\x80\x80",
                                             "\xFF",
                                             "\x80",
                                             "\xE2\x82",
                                             "IMGIMGAZ",
                                             "<sentinel:12>",
                                             "\xD9\xA3"};
  std::mt19937 rng(7);
  for (const char* name : names) {
    auto p = PreTokenizer::create(name);
    ASSERT_TRUE(p.ok()) << name << ": " << p.status().to_string();
    for (int trial = 0; trial < 200; ++trial) {
      std::string text;
      for (int k = 0, n = static_cast<int>(rng() % 30); k < n; ++k) {
        text += alphabet[rng() % alphabet.size()];
      }
      std::vector<ByteRange> ranges;
      (*p)->split(text, ranges);
      size_t expect_begin = 0;
      for (const auto& [b, e] : ranges) {
        ASSERT_EQ(b, expect_begin) << name;
        ASSERT_LT(b, e) << name;
        expect_begin = e;
      }
      ASSERT_EQ(expect_begin, text.size()) << name;
    }
  }
}

}  // namespace
}  // namespace pagoda::tokenizer
