// StopStringSet / StopStringMatcher against a naive reference: for every text, stop set and way
// of cutting the text into pushes, the streamed text equals the naive cut (first match to end,
// longest at that end), every push emits exactly "received minus the longest suffix that is a
// proper prefix of a stop string" (widened to a UTF-8 boundary), and emitted text is never
// retracted. Includes thousands of stop strings.
#include "engine/stop_strings.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace pagoda::engine {
namespace {

bool ends_with(const std::string& s, size_t end, const std::string& suffix) {
  return suffix.size() <= end && s.compare(end - suffix.size(), suffix.size(), suffix) == 0;
}

struct NaiveCut {
  std::string text;  // what should be streamed in total
  int matched = -1;  // index of the stop string, or -1
};

NaiveCut naive_cut(const std::string& text, const std::vector<std::string>& stops, bool include) {
  for (size_t end = 1; end <= text.size(); ++end) {
    int best = -1;
    for (size_t i = 0; i < stops.size(); ++i) {
      if (ends_with(text, end, stops[i]) &&
          (best < 0 || stops[i].size() > stops[static_cast<size_t>(best)].size())) {
        best = static_cast<int>(i);
      }
    }
    if (best >= 0) {
      const size_t len = stops[static_cast<size_t>(best)].size();
      return NaiveCut{text.substr(0, include ? end : end - len), best};
    }
  }
  return NaiveCut{text, -1};
}

// Longest suffix of `received` that is a proper prefix of some stop string.
size_t naive_hold(const std::string& received, const std::vector<std::string>& stops) {
  size_t best = 0;
  for (const std::string& s : stops) {
    for (size_t k = std::min(received.size(), s.size() - 1); k > best; --k) {
      if (ends_with(received, received.size(), s.substr(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

bool is_continuation(char c) {
  return (static_cast<uint8_t>(c) & 0xC0) == 0x80;
}

// Runs the matcher over `text` cut at `cuts`, checking every push; returns the streamed text.
std::string stream(const std::string& text, const std::vector<size_t>& cuts,
                   const std::vector<std::string>& stops, bool include, int* matched) {
  auto set = StopStringSet::create(stops);
  EXPECT_TRUE(set.ok()) << set.status().to_string();
  StopStringMatcher m(*set, include);
  const NaiveCut want = naive_cut(text, stops, include);
  std::string out;
  std::string received;
  size_t prev = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t next = i < cuts.size() ? cuts[i] : text.size();
    const std::string piece = text.substr(prev, next - prev);
    prev = next;
    const std::string delta = m.push(piece);
    out += delta;
    EXPECT_EQ(want.text.compare(0, out.size(), out), 0) << "emitted text not in the final text";
    if (m.matched()) break;
    received += piece;
    // Emitted exactly what can no longer become part of a match.
    size_t emit = received.size() - naive_hold(received, stops);
    while (emit > 0 && emit < received.size() && is_continuation(received[emit]))
      --emit;
    EXPECT_EQ(out, received.substr(0, emit)) << "after pushing up to byte " << next;
  }
  out += m.flush();
  *matched = m.matched() ? *m.matched() : -1;
  EXPECT_EQ(out, want.text);
  EXPECT_EQ(*matched, want.matched);
  return out;
}

TEST(StopStringSet, RejectsEmptyStringsAndNamesThem) {
  auto s = StopStringSet::create({"ok", ""});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("stop_strings[1]"), std::string::npos);
  EXPECT_TRUE(StopStringSet::create({}).ok());
  auto bad = StopStringSet::create({"ok", "x\xa9"});  // a lone continuation byte
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("stop_strings[1]"), std::string::npos);
}

TEST(StopStringMatcher, HandPickedCases) {
  int m = 0;
  // Split across pushes; the text before the stop string streams as soon as it is safe.
  EXPECT_EQ(stream("Hello world", {3, 7, 9}, {"o w"}, false, &m), "Hell");
  EXPECT_EQ(m, 0);
  EXPECT_EQ(stream("Hello world", {3, 7, 9}, {"o w"}, true, &m), "Hello w");
  // Overlapping candidates: "abd" fails, "bc" completes.
  EXPECT_EQ(stream("xabcd", {1, 2, 3}, {"abd", "bc"}, false, &m), "xa");
  EXPECT_EQ(m, 1);
  // Two matches end at the same byte: the longer wins.
  EXPECT_EQ(stream("xxabc", {2}, {"bc", "abc"}, false, &m), "xx");
  EXPECT_EQ(m, 1);
  // The earliest *ending* match wins even if another started earlier.
  EXPECT_EQ(stream("abcdef", {1, 4}, {"abcdef", "cd"}, false, &m), "ab");
  EXPECT_EQ(m, 1);
  // No match: everything streams, the tail at flush.
  EXPECT_EQ(stream("hello wo", {6}, {"world"}, false, &m), "hello wo");
  EXPECT_EQ(m, -1);
  // A multi-byte stop string, and text held back on a character boundary.
  EXPECT_EQ(stream("caf\xc3\xa9 au lait", {4, 5, 8}, {"\xc3\xa9 au"}, false, &m), "caf");
  EXPECT_EQ(stream("a\xc3\xa9\xc3\xa8", {3}, {"\xc3\xa9\xc3\xa9"}, false, &m), "a\xc3\xa9\xc3\xa8");
}

TEST(StopStringMatcher, NoStopStringsPassesThrough) {
  StopStringMatcher m(nullptr, false);
  EXPECT_EQ(m.push("abc"), "abc");
  EXPECT_EQ(m.flush(), "");
  EXPECT_FALSE(m.matched());
}

TEST(StopStringMatcher, NothingAfterAMatch) {
  auto set = StopStringSet::create({"END"});
  ASSERT_TRUE(set.ok());
  StopStringMatcher m(*set, false);
  EXPECT_EQ(m.push("abcEN"), "abc");
  EXPECT_EQ(m.push("Dxyz"), "");
  EXPECT_EQ(m.matched_string(), "END");
  EXPECT_EQ(m.push("more"), "");
  EXPECT_EQ(m.flush(), "");
}

// Random texts over a small alphabet with multi-byte characters, random stop sets (often
// substrings of the text), random cuts on character boundaries.
TEST(StopStringMatcher, RandomAgainstNaive) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "c", " ", "\xc3\xa9", "\xe4\xb8\x96"};
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<std::string> chars;
    const int len = static_cast<int>(rng() % 40);
    std::string text;
    std::vector<size_t> boundaries;
    for (int i = 0; i < len; ++i) {
      text += alphabet[rng() % (iter % 2 == 0 ? 4 : alphabet.size())];
      boundaries.push_back(text.size());
    }
    std::vector<std::string> stops;
    const int num_stops = 1 + static_cast<int>(rng() % 5);
    for (int i = 0; i < num_stops; ++i) {
      std::string s;
      if (!text.empty() && rng() % 2 == 0) {
        const size_t a = rng() % boundaries.size();
        const size_t b = std::min(boundaries.size() - 1, a + 1 + rng() % 4);
        const size_t begin = a == 0 ? 0 : boundaries[a - 1];
        s = text.substr(begin, boundaries[b] - begin);
        if (rng() % 3 == 0) s += "a";  // sometimes a near miss
      } else {
        const int sl = 1 + static_cast<int>(rng() % 4);
        for (int j = 0; j < sl; ++j)
          s += alphabet[rng() % alphabet.size()];
      }
      stops.push_back(s);
    }
    std::vector<size_t> cuts;
    for (const size_t b : boundaries) {
      if (rng() % 3 == 0 && b < text.size()) cuts.push_back(b);
    }
    int m = 0;
    stream(text, cuts, stops, iter % 3 == 0, &m);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "iteration " << iter << " text '" << text << "'";
      return;
    }
  }
}

// Thousands of stop strings: same answers as the naive scan, and the automaton stays linear in
// their total size.
TEST(StopStringMatcher, ThousandsOfStopStrings) {
  std::mt19937 rng(99);
  const auto random_word = [&](int len) {
    std::string s;
    for (int i = 0; i < len; ++i)
      s += static_cast<char>('a' + rng() % 6);
    return s;
  };
  std::vector<std::string> stops;
  size_t total = 0;
  for (int i = 0; i < 4000; ++i) {
    stops.push_back(random_word(6 + static_cast<int>(rng() % 10)));
    total += stops.back().size();
  }
  auto set = StopStringSet::create(stops);
  ASSERT_TRUE(set.ok());
  EXPECT_LE((*set)->num_states(), total + 1);
  for (int iter = 0; iter < 20; ++iter) {
    std::string text = random_word(1500);
    if (iter % 2 == 0) {
      text.insert(700 + iter, stops[static_cast<size_t>(iter) * 97]);  // a planted match
    }
    std::vector<size_t> cuts;
    for (size_t p = 1 + rng() % 4; p < text.size(); p += 1 + rng() % 4)
      cuts.push_back(p);
    StopStringMatcher m(*set, false);
    std::string out;
    size_t prev = 0;
    for (size_t i = 0; i <= cuts.size() && !m.matched(); ++i) {
      const size_t next = i < cuts.size() ? cuts[i] : text.size();
      out += m.push(std::string_view(text).substr(prev, next - prev));
      prev = next;
    }
    out += m.flush();
    const NaiveCut want = naive_cut(text, stops, false);
    EXPECT_EQ(out, want.text) << "iteration " << iter;
    EXPECT_EQ(m.matched().value_or(-1), want.matched);
  }
}

TEST(StopStringSet, EnforcesLimits) {
  std::vector<std::string> many(StopStringSet::kMaxStrings + 1, "x");
  auto a = StopStringSet::create(many);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("stop_strings"), std::string::npos);
  std::vector<std::string> big = {std::string(StopStringSet::kMaxTotalBytes, 'a'), "b"};
  EXPECT_FALSE(StopStringSet::create(big).ok());
}

}  // namespace
}  // namespace pagoda::engine
