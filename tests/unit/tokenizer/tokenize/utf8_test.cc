// UTF-8 helpers on hand-computed cases (the replacement counts follow the Unicode "maximal
// subpart" practice, e.g. Python's bytes.decode(errors="replace")) and random-byte properties.
#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace pagoda::tokenizer {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, SanitizeReplacesMaximalSubparts) {
  EXPECT_EQ(utf8::sanitize("abc"), "abc");
  EXPECT_EQ(utf8::sanitize("\xE4\xB8\xAD\xF0\x9F\xA6\x99"), "\xE4\xB8\xAD\xF0\x9F\xA6\x99");
  EXPECT_EQ(utf8::sanitize("a\xFF"
                           "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(utf8::sanitize("\xF0\x9F\x98"), kFffd);                  // truncated 4-byte: one
  EXPECT_EQ(utf8::sanitize("\xE0\x80"), kFffd + kFffd);              // E0 needs A0..BF next
  EXPECT_EQ(utf8::sanitize("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(utf8::sanitize("\xC0\xAF"), kFffd + kFffd);              // overlong
  EXPECT_EQ(utf8::sanitize("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(utf8::sanitize("\xE2\x82"
                           "A"),
            kFffd + "A");
}

TEST(Utf8Test, IncompleteTail) {
  EXPECT_EQ(utf8::incomplete_tail_length(""), 0u);
  EXPECT_EQ(utf8::incomplete_tail_length("ab"), 0u);
  EXPECT_EQ(utf8::incomplete_tail_length("a\xE4"), 1u);
  EXPECT_EQ(utf8::incomplete_tail_length("a\xE4\xB8"), 2u);
  EXPECT_EQ(utf8::incomplete_tail_length("a\xE4\xB8\xAD"), 0u);
  EXPECT_EQ(utf8::incomplete_tail_length("\xF0\x9F\xA6"), 3u);
  EXPECT_EQ(utf8::incomplete_tail_length("\xE0\x80"), 0u);  // can never complete
  EXPECT_EQ(utf8::incomplete_tail_length("\x80\x80\x80"), 0u);
  EXPECT_EQ(utf8::incomplete_tail_length("\xFF"), 0u);
}

TEST(Utf8Test, RandomBytesProperties) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string s;
    for (int k = 0, n = static_cast<int>(rng() % 10); k < n; ++k) {
      // Bias towards bytes that matter: lead bytes, continuations, ASCII.
      static const uint8_t kBytes[] = {'a',  0x80, 0x9F, 0xA0, 0xBF, 0xC2, 0xDF, 0xE0,
                                       0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xC0, 0xFF};
      s.push_back(static_cast<char>(kBytes[rng() % sizeof(kBytes)]));
    }
    const std::string clean = utf8::sanitize(s);
    ASSERT_TRUE(utf8::is_valid(clean));
    if (utf8::is_valid(s)) {
      ASSERT_EQ(clean, s);
    }
    const size_t tail = utf8::incomplete_tail_length(s);
    ASSERT_LE(tail, 3u);
    if (tail > 0) {
      // Completing the tail with continuation bytes can make the whole tail valid.
      ASSERT_FALSE(utf8::is_valid(s.substr(s.size() - tail)));
    }
  }
}

}  // namespace
}  // namespace pagoda::tokenizer
