// The string regexes of json_schema_strings.h through the regex compiler: formats exhaustively
// where the domain is small (dates, IPv4 octets), patterns rewritten over JSON-escaped content,
// and keys excluding a set of names.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <fmt/format.h>

#include "structured/json_schema_strings.h"
#include "structured/regex.h"

namespace pagoda::structured::json_schema_detail {
namespace {

ByteNfa compiled(const std::string& regex) {
  Result<ByteNfa> nfa = compile_regex(regex);
  EXPECT_TRUE(nfa.ok()) << regex << ": " << nfa.status().to_string();
  return nfa.ok() ? std::move(*nfa) : ByteNfa{};
}

bool leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

TEST(FormatRegex, DateIsTheCalendar) {
  const ByteNfa nfa = compiled(format_content("date")->regex);
  const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  for (int y : {0, 1, 4, 100, 400, 999, 1000, 1600, 1899, 1900, 1999, 2000, 2001, 2023, 2024, 2100,
                2400, 9996, 9999}) {
    for (int m = 0; m <= 13; ++m) {
      for (int d = 0; d <= 32; ++d) {
        const bool valid = y >= 1 && m >= 1 && m <= 12 && d >= 1 &&
                           d <= days[m - 1 < 0 ? 0 : (m > 12 ? 0 : m - 1)] + (m == 2 && leap(y));
        const std::string text = fmt::format("{:04}-{:02}-{:02}", y, m, d);
        ASSERT_EQ(nfa.full_match(text), valid) << text;
      }
    }
  }
  EXPECT_FALSE(nfa.full_match("2024-1-01"));
  EXPECT_FALSE(nfa.full_match("20240101"));
}

TEST(FormatRegex, Ipv4OctetsAndTimes) {
  const ByteNfa ip = compiled(format_content("ipv4")->regex);
  for (int o = 0; o <= 300; ++o) {
    EXPECT_EQ(ip.full_match(fmt::format("10.{}.0.1", o)), o <= 255) << o;
    EXPECT_FALSE(ip.full_match(fmt::format("10.0{}.0.1", o))) << o;
  }
  const ByteNfa time = compiled(format_content("time")->regex);
  for (int h = 0; h <= 25; ++h) {
    for (int m : {0, 59, 60}) {
      const std::string text = fmt::format("{:02}:{:02}:30.25Z", h, m);
      EXPECT_EQ(time.full_match(text), h <= 23 && m <= 59) << text;
    }
  }
  EXPECT_TRUE(format_content("hostname"));
  EXPECT_FALSE(format_content("ipv6"));
  EXPECT_TRUE(is_unenforced_standard_format("ipv6"));
  EXPECT_FALSE(is_unenforced_standard_format("int32"));
  EXPECT_FALSE(format_content("int32"));
}

struct PatternCase {
  std::string pattern;
  std::vector<std::string> valid;  // JSON string content as written (escaped)
  std::vector<std::string> invalid;
};

TEST(PatternContent, MatchesEscapedContent) {
  const std::vector<PatternCase> cases = {
      {"^abc$", {"abc"}, {"abcd", "xabc", ""}},
      {"b", {"b", "abc", "\\\"b"}, {"", "a"}},
      {"^[^x]$", {"a", "\\\"", "\\\\", "\\n", "\\u0001", "\xc3\xa9"}, {"x", "\"", "\\", "ab"}},
      {"^\\d+\\.\\d*$", {"1.", "12.34"}, {".5", "a.1", "1"}},
      {"^[\\s]+$", {" ", "\\t\\n", "\xe2\x80\x83"}, {"a", "\t"}},
      {"^\\S\\W\\D$", {"a-x", "\\\"\\\\\\\""}, {" -x", "aa1"}},
      {"^(?:ab|cd){2,3}$", {"abcd", "cdcdab"}, {"ab", "abcdabcd"}},
      {"^(?<name>x)y?$", {"x", "xy"}, {"y"}},
      {"^\\u00e9\\x41\\n\\t\\\\\\/\\.$",
       {"\xc3\xa9"
        "A\\n\\t\\\\/."},
       {"\xc3\xa9"
        "A\n\t\\/."}},
      {"^[a-c-]$", {"a", "-", "c"}, {"d"}},
      {"^[\\]\\[]$", {"]", "["}, {"\\\\"}},
      {"^.$", {"a", "\\\"", "\\t", "\xf0\x9f\x98\x80"}, {"\\n", "\\r", ""}},
      {"^\"+$", {"\\\"", "\\\"\\\""}, {"\"", "\\\"\""}},
      {"^\\ud83d\\ude00$", {"\xf0\x9f\x98\x80"}, {"\\ud83d\\ude00"}},
      {"", {"", "anything"}, {}},
      {"^$", {""}, {"a"}},
      {"a|^b$", {"xay", "b"}, {"xb", "bb"}},
      {"x*?y+?", {"y", "xxy"}, {"x"}},
      {"^a{2}b{1,}c{0,1}$", {"aab", "aabbbc"}, {"ab", "aabcc"}},
      {"^{}$", {"{}"}, {""}},
  };
  for (const PatternCase& c : cases) {
    Result<StringContent> content = pattern_content(c.pattern);
    ASSERT_TRUE(content.ok()) << c.pattern << ": " << content.status().to_string();
    SCOPED_TRACE(c.pattern + " -> " + content->regex);
    const ByteNfa nfa = compiled(content->regex);
    for (const std::string& v : c.valid)
      EXPECT_TRUE(nfa.full_match(v)) << v;
    for (const std::string& v : c.invalid)
      EXPECT_FALSE(nfa.full_match(v)) << v;
  }
}

TEST(PatternContent, LengthBounds) {
  auto bounds = [](const std::string& p) {
    Result<StringContent> c = pattern_content(p);
    EXPECT_TRUE(c.ok()) << p;
    return std::make_pair(c->min_length, c->max_length);
  };
  EXPECT_EQ(bounds("^[0-9]{5}$"), std::make_pair(int64_t{5}, std::optional<int64_t>(5)));
  EXPECT_EQ(bounds("^a(bc|d)?$"), std::make_pair(int64_t{1}, std::optional<int64_t>(3)));
  EXPECT_EQ(bounds("^a+$"), std::make_pair(int64_t{1}, std::optional<int64_t>()));
  EXPECT_EQ(bounds("abc"), std::make_pair(int64_t{3}, std::optional<int64_t>()));
  EXPECT_EQ(bounds("^x$|^yy$"), std::make_pair(int64_t{1}, std::optional<int64_t>(2)));
}

TEST(PatternContent, RefusesWhatItCannotEnforce) {
  for (const char* p :
       {"(?=a)", "(?!a)", "(?<=a)b", "(?<!a)b", "(a)\\1", "\\k<n>", "a\\b", "\\B",     "a^",
        "$a",    "(^a)",  "(a$)",    "\\p{L}",  "\\P{L}", "[b-a]",  "(",    ")",       "[a",
        "*a",    "a**",   "a{2}{3}", "a{2000}", "\\",     "\\q",    "[]",   "\\ud800", "(?i)a"}) {
    Result<StringContent> c = pattern_content(p);
    EXPECT_FALSE(c.ok()) << p << " -> " << (c.ok() ? c->regex : "");
  }
}

TEST(LengthContent, CountsCodePoints) {
  const ByteNfa nfa = compiled(length_content_regex(2, 3));
  for (const char* ok :
       {"ab", "abc", "\\n\\t", "\xf0\x9f\x98\x80\xf0\x9f\x98\x80", "\\ud83d\\ude00a"})
    EXPECT_TRUE(nfa.full_match(ok)) << ok;
  for (const char* bad : {"a", "abcd", "\\ud83d\\ude00", "\\ud83da", "\""})
    EXPECT_FALSE(nfa.full_match(bad)) << bad;
}

TEST(KeyExcluding, AnyCanonicalKeyButTheNames) {
  const std::vector<std::string> names = {"a", "ab", "q\"t", "", "n\nl", "\xc3\xbc"};
  const std::optional<std::string> regex = key_excluding_regex(names);
  ASSERT_TRUE(regex);
  const ByteNfa nfa = compiled(*regex);
  for (const std::string& name : names)
    EXPECT_FALSE(nfa.full_match(json_string_text(name))) << name;
  for (const char* other :
       {"\"b\"", "\"abc\"", "\"aa\"", "\"q\\\"\"", "\"q\\\"tt\"", "\"\\\\\"", "\"n\\nl2\"",
        "\"n\\tl\"", "\"\xc3\xbc\xc3\xbc\"", "\"\xc3\xa4\"", "\"\\u0001\""})
    EXPECT_TRUE(nfa.full_match(other)) << other;
  // Non-canonical spellings are not produced (they could spell a known name).
  for (const char* spelled : {"\"\\u0061\"", "\"\\/\"", "\"\\u000a\""})
    EXPECT_FALSE(nfa.full_match(spelled)) << spelled;
  EXPECT_FALSE(key_excluding_regex({std::string(129, 'k')}));
  EXPECT_TRUE(key_excluding_regex({std::string(128, 'k')}));
}

TEST(JsonStringText, IsCanonical) {
  EXPECT_EQ(json_string_text("a\"b\\c\n\t\x01\x7f\xc3\xa9/"),
            "\"a\\\"b\\\\c\\n\\t\\u0001\x7f\xc3\xa9/\"");
}

}  // namespace
}  // namespace pagoda::structured::json_schema_detail
