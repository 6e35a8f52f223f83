// integer_range_regex / number_range_regex checked exhaustively against the bounds, through the
// regex compiler (regex.h) the matcher uses.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "structured/json_number_range.h"
#include "structured/regex.h"

namespace pagoda::structured {
namespace {

ByteNfa compiled(const std::string& regex) {
  Result<ByteNfa> nfa = compile_regex(regex);
  EXPECT_TRUE(nfa.ok()) << regex << ": " << nfa.status().to_string();
  return nfa.ok() ? std::move(*nfa) : ByteNfa{};
}

std::string bound_name(std::optional<int64_t> b) {
  return b ? std::to_string(*b) : "none";
}

TEST(IntegerRangeRegex, ExhaustiveOverSmallBounds) {
  const std::vector<std::optional<int64_t>> bounds = {
      std::nullopt, -1000, -999, -101, -100, -99, -91, -10, -9,  -1,  0,   1,   5, 9,
      10,           11,    19,   90,   99,   100, 101, 199, 200, 909, 999, 1000};
  for (const auto& lo : bounds) {
    for (const auto& hi : bounds) {
      if (lo && hi && *lo > *hi) continue;
      const std::string regex = integer_range_regex(lo, hi);
      SCOPED_TRACE(fmt::format("[{}, {}] {}", bound_name(lo), bound_name(hi), regex));
      const ByteNfa nfa = compiled(regex);
      for (int64_t v = -1100; v <= 1100; ++v) {
        const bool in = (!lo || v >= *lo) && (!hi || v <= *hi);
        ASSERT_EQ(nfa.full_match(std::to_string(v)), in) << v;
      }
      // Only canonical texts.
      for (const char* text : {"", "-", "-0", "00", "01", "+1", "1.0", "1e1", " 1", "--1"})
        EXPECT_FALSE(nfa.full_match(text)) << text;
    }
  }
}

TEST(IntegerRangeRegex, LargeBoundsAtTheirEdges) {
  const std::vector<std::pair<int64_t, int64_t>> ranges = {
      {123456789012, 123456799999},
      {-999999999999999999, 999999999999999999},
      {-1000000000000000000, 1000000000000000000},
      {99999, 100000},
      {-100000, -99999},
      {4096, 65535},
      {-2147483648, 2147483647},
  };
  for (const auto& [lo, hi] : ranges) {
    const ByteNfa nfa = compiled(integer_range_regex(lo, hi));
    SCOPED_TRACE(fmt::format("[{}, {}]", lo, hi));
    for (int64_t d : {-11, -10, -9, -2, -1, 0, 1, 2, 9, 10, 11}) {
      for (int64_t edge : {lo, hi}) {
        const int64_t v = edge + d;
        if (v < -kMaxNumberBound - 20 || v > kMaxNumberBound + 20) continue;
        EXPECT_EQ(nfa.full_match(std::to_string(v)), v >= lo && v <= hi) << v;
      }
    }
    // Random values in and around the range.
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < 2000; ++i) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      const auto span = static_cast<uint64_t>(hi - lo) / 2 + 1;
      const int64_t v =
          lo - static_cast<int64_t>(span / 2) + static_cast<int64_t>((state >> 1) % (span * 2));
      EXPECT_EQ(nfa.full_match(std::to_string(v)), v >= lo && v <= hi) << v;
    }
  }
  // Unbounded sides with long numbers.
  const ByteNfa at_least = compiled(integer_range_regex(12345, std::nullopt));
  EXPECT_TRUE(at_least.full_match("12345"));
  EXPECT_TRUE(at_least.full_match("99999999999999999999999999"));
  EXPECT_FALSE(at_least.full_match("12344"));
  EXPECT_FALSE(at_least.full_match("-99999999999999999999999999"));
  const ByteNfa at_most = compiled(integer_range_regex(std::nullopt, -12345));
  EXPECT_TRUE(at_most.full_match("-12345"));
  EXPECT_TRUE(at_most.full_match("-99999999999999999999999999"));
  EXPECT_FALSE(at_most.full_match("-12344"));
  EXPECT_FALSE(at_most.full_match("0"));
}

// Texts: integers and decimals around the bounds; a value is in iff the bounds say so, except that
// "-0..." texts (negative zero) are never produced.
TEST(NumberRangeRegex, ExhaustiveOverSmallBounds) {
  std::vector<std::string> texts;
  for (int i = -12; i <= 12; ++i) {
    texts.push_back(std::to_string(i));
    for (const char* frac : {".0", ".00", ".5", ".05", ".999", ".10"}) {
      texts.push_back(std::to_string(i) + frac);
      if (i == 0) texts.push_back(std::string("-0") + frac);
    }
  }
  const std::vector<std::optional<int64_t>> bounds = {std::nullopt, -10, -3, -1, 0, 1, 2, 10};
  for (const auto& lo : bounds) {
    for (const auto& hi : bounds) {
      for (int flags = 0; flags < 4; ++flags) {
        const bool lo_excl = (flags & 1) != 0, hi_excl = (flags & 2) != 0;
        if ((!lo && lo_excl) || (!hi && hi_excl)) continue;
        if (lo && hi && *lo > *hi) continue;
        const std::optional<std::string> regex = number_range_regex(lo, lo_excl, hi, hi_excl);
        SCOPED_TRACE(fmt::format("{}{}, {}{} {}", lo_excl ? "(" : "[", bound_name(lo),
                                 bound_name(hi), hi_excl ? ")" : "]", regex.value_or("none")));
        bool any = false;
        std::optional<ByteNfa> nfa;
        if (regex) nfa = compiled(*regex);
        for (const std::string& t : texts) {
          const double v = std::strtod(t.c_str(), nullptr);
          const bool in =
              (!lo || (lo_excl ? v > static_cast<double>(*lo) : v >= static_cast<double>(*lo))) &&
              (!hi || (hi_excl ? v < static_cast<double>(*hi) : v <= static_cast<double>(*hi)));
          const bool negative_zero = t.rfind("-0", 0) == 0 && v == 0;
          any = any || in;
          if (!regex) {
            EXPECT_FALSE(in) << t;
            continue;
          }
          ASSERT_EQ(nfa->full_match(t), in && !negative_zero) << t;
        }
        if (regex) {
          EXPECT_FALSE(nfa->full_match("1e0"));
        } else {
          EXPECT_FALSE(any);
        }
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::structured
