// The UTF-8 side of compile_regex: the code point range splitting (every scalar value in exactly
// one sequence), `[^]` accepting exactly the valid one-code-point strings (exhaustive up to three
// bytes), `.` and negated classes on multi-byte characters, and prefixes of a character staying
// alive without matching.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "structured/regex.h"
#include "structured/utf8_ranges.h"
#include "tokenizer/utf8.h"
#include "unit/structured/regex/regex_test_util.h"

namespace pagoda::structured {
namespace {

namespace utf8 = tokenizer::utf8;
using test::compile_ok;
using test::cp_utf8;
using test::expect_well_formed;
using test::run;

TEST(Utf8Ranges, EveryScalarValueMatchesExactlyOneSequence) {
  std::vector<Utf8Sequence> seqs;
  append_utf8_sequences(0, kMaxCodePoint, seqs);
  EXPECT_LE(seqs.size(), 12u);
  auto count = [&seqs](const std::string& bytes) {
    int n = 0;
    for (const Utf8Sequence& q : seqs) {
      bool ok = q.len == bytes.size();
      for (size_t i = 0; ok && i < bytes.size(); ++i) {
        const auto b = static_cast<uint8_t>(bytes[i]);
        ok = q.bytes[i].lo <= b && b <= q.bytes[i].hi;
      }
      n += ok;
    }
    return n;
  };
  size_t num_checked = 0;
  for (uint32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    ASSERT_EQ(count(cp_utf8(cp)), 1) << cp;
    ++num_checked;
  }
  EXPECT_EQ(num_checked, 0x110000u - 0x800u);  // every scalar value
}

TEST(Utf8Ranges, SubrangesCoverExactlyTheirCodePoints) {
  std::mt19937 rng(3);
  const uint32_t edges[] = {0,       0x7F,    0x80,    0x7FF,   0x800,    0xFFF,
                            0x1000,  0xD7FF,  0xD800,  0xDFFF,  0xE000,   0xFFFF,
                            0x10000, 0x3FFFF, 0x40000, 0xFFFFF, 0x100000, kMaxCodePoint};
  auto random_cp = [&rng, &edges]() {
    const uint32_t e = edges[rng() % (sizeof(edges) / sizeof(edges[0]))];
    const int32_t jitter = static_cast<int32_t>(rng() % 5) - 2;
    const int64_t v =
        static_cast<int64_t>(e) + (rng() % 2 ? jitter : static_cast<int32_t>(rng() % 70000));
    return static_cast<uint32_t>(std::clamp<int64_t>(v, 0, kMaxCodePoint));
  };
  for (int t = 0; t < 300; ++t) {
    uint32_t lo = random_cp(), hi = random_cp();
    if (lo > hi) std::swap(lo, hi);
    std::vector<Utf8Sequence> seqs;
    append_utf8_sequences(lo, hi, seqs);
    std::vector<uint32_t> probes = {lo, hi, lo > 0 ? lo - 1 : 0, std::min(hi + 1, kMaxCodePoint)};
    for (int k = 0; k < 50; ++k)
      probes.push_back(random_cp());
    for (uint32_t cp : probes) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      const std::string b = cp_utf8(cp);
      int n = 0;
      for (const Utf8Sequence& q : seqs) {
        bool ok = q.len == b.size();
        for (size_t i = 0; ok && i < b.size(); ++i)
          ok = q.bytes[i].lo <= static_cast<uint8_t>(b[i]) &&
               static_cast<uint8_t>(b[i]) <= q.bytes[i].hi;
        n += ok;
      }
      ASSERT_EQ(n, (cp >= lo && cp <= hi) ? 1 : 0) << std::hex << lo << ".." << hi << " " << cp;
    }
  }
}

TEST(RegexUtf8, AnyCodePointAcceptsExactlyValidUtf8) {
  // [^] is every scalar value: its NFA must accept exactly the valid one-code-point strings.
  const ByteNfa any = compile_ok("[^]");
  expect_well_formed(any, "[^]");
  auto one_code_point = [](const std::string& s) {
    return utf8::is_valid(s) && utf8::valid_sequence_length(s, 0) == s.size();
  };
  std::string s(1, '\0');
  for (int a = 0; a < 256; ++a) {
    s[0] = static_cast<char>(a);
    ASSERT_EQ(any.full_match(s), one_code_point(s)) << a;
  }
  s.assign(2, '\0');
  for (int a = 0; a < 65536; ++a) {
    s[0] = static_cast<char>(a >> 8);
    s[1] = static_cast<char>(a);
    ASSERT_EQ(any.full_match(s), one_code_point(s)) << a;
  }
  s.assign(3, '\0');
  for (int a = 0xE00000; a < 0x1000000; ++a) {
    s[0] = static_cast<char>(a >> 16);
    s[1] = static_cast<char>(a >> 8);
    s[2] = static_cast<char>(a);
    ASSERT_EQ(any.full_match(s), one_code_point(s)) << a;
  }
  std::mt19937 rng(5);
  s.assign(4, '\0');
  for (int i = 0; i < 300000; ++i) {
    const uint32_t r = rng();
    s[0] = static_cast<char>(0xF0 | ((r >> 24) & 0x0F));
    s[1] = static_cast<char>(r >> 16);
    s[2] = static_cast<char>(r >> 8);
    s[3] = static_cast<char>(r);
    if (i % 2) {  // mostly well-formed continuations, so the interesting cases dominate
      for (int k = 1; k < 4; ++k)
        s[static_cast<size_t>(k)] = static_cast<char>(0x80 | (s[static_cast<size_t>(k)] & 0x3F));
    }
    ASSERT_EQ(any.full_match(s), one_code_point(s)) << std::hex << r;
  }
}

TEST(RegexUtf8, DotMatchesOneCodePoint) {
  const ByteNfa dot = compile_ok(".");
  for (const char* ok : {"a", "\x7f", "\xc2\x80", "\xc3\xa9", "\xe2\x82\xac", "\xef\xbf\xbf",
                         "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xee\x80\x80"})
    EXPECT_TRUE(dot.full_match(ok)) << ok;
  for (const char* bad : {"\n", "\r", "\xe2\x80\xa8", "\xe2\x80\xa9",  // line terminators
                          "\x80", "\xbf",                              // lone continuation
                          "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80", "\xf0\x80\x80\x80",  // overlong
                          "\xed\xa0\x80", "\xed\xbf\xbf",                              // surrogates
                          "\xf4\x90\x80\x80", "\xf5\x80\x80\x80",  // above U+10FFFF
                          "ab", "", "\xc3", "\xc3\xa9\xa9"})
    EXPECT_FALSE(dot.full_match(bad)) << ::testing::PrintToString(std::string(bad));
}

TEST(RegexUtf8, NegatedClassesAndRanges) {
  const ByteNfa not_quote = compile_ok("[^\"]");
  for (const char* s : {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "a", "\n"})
    EXPECT_TRUE(not_quote.full_match(s)) << s;
  EXPECT_FALSE(not_quote.full_match("\""));
  const ByteNfa greek = compile_ok("[α-ω]+");
  EXPECT_TRUE(greek.full_match("αβγω"));
  EXPECT_FALSE(greek.full_match("αβΓ"));
  EXPECT_FALSE(greek.full_match(""));
  EXPECT_TRUE(compile_ok("\\u00e9").full_match("é"));
  EXPECT_TRUE(compile_ok("\\u{1F600}").full_match("😀"));
  EXPECT_TRUE(compile_ok("\\uD83D\\uDE00").full_match("😀"));
  EXPECT_TRUE(compile_ok("\\x{e9}").full_match("é"));
  EXPECT_TRUE(compile_ok("é+").full_match("ééé"));
  EXPECT_FALSE(compile_ok("é+").full_match("\xc3\xa9\xa9"));
  EXPECT_TRUE(compile_ok("[😀-😂]").full_match("😁"));
  EXPECT_FALSE(compile_ok("[😀-😂]").full_match("😃"));
  EXPECT_TRUE(compile_ok("\\s").full_match("\xe3\x80\x80"));  // U+3000
  EXPECT_TRUE(compile_ok("\\s").full_match("\xef\xbb\xbf"));  // U+FEFF
  EXPECT_FALSE(compile_ok("\\s").full_match("\xc2\x85"));     // U+0085 is not ECMAScript space
  EXPECT_TRUE(compile_ok("\\S").full_match("\xc2\x85"));
  EXPECT_TRUE(compile_ok("\\W").full_match("é"));
  EXPECT_TRUE(compile_ok("\\D").full_match("😀"));
  const ByteNfa json_char = compile_ok("[^\"\\\\\\x00-\\x1f]{0,200}");
  EXPECT_TRUE(json_char.full_match("héllo wörld €😀"));
  EXPECT_FALSE(json_char.full_match("a\"b"));
  EXPECT_FALSE(json_char.full_match("a\x01"));
  EXPECT_TRUE(json_char.full_match(std::string(200, 'x')));
  EXPECT_FALSE(json_char.full_match(std::string(201, 'x')));
}

TEST(RegexUtf8, PrefixOfAMultiByteCharacterIsLiveButNotAMatch) {
  const ByteNfa nfa = compile_ok("a€b|😀");
  EXPECT_TRUE(run(nfa, "a\xe2").alive);
  EXPECT_TRUE(run(nfa, "a\xe2\x82").alive);
  EXPECT_FALSE(run(nfa, "a\xe2\x82").accepting);
  EXPECT_TRUE(run(nfa, "a\xe2\x82\xac").alive);
  EXPECT_TRUE(run(nfa, "\xf0\x9f\x98").alive);
  EXPECT_FALSE(run(nfa, "\xf0\x9f\x98").accepting);
  EXPECT_FALSE(nfa.full_match("\xf0\x9f\x98"));
  EXPECT_TRUE(run(nfa, "\xf0\x9f\x98\x80").accepting);
  EXPECT_FALSE(run(nfa, "\xf0\x9f\x98\x81").alive);
  EXPECT_FALSE(run(nfa, "a\xe2\x82\xad").alive);
  const ByteNfa dot = compile_ok(".*");
  EXPECT_TRUE(run(dot, "ab\xf4\x8f").alive);
  EXPECT_FALSE(run(dot, "ab\xf4\x90").alive);  // would be above U+10FFFF
  EXPECT_FALSE(run(dot, "\xed\xa0").alive);    // would be a surrogate
  EXPECT_FALSE(run(dot, "\xe0\x9f").alive);    // would be overlong
}

}  // namespace
}  // namespace pagoda::structured
