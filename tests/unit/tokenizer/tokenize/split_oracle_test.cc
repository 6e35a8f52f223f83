// The GPT-2 and Llama-3 pre-tokenizers against an independent oracle: llama.cpp runs these two
// patterns through hand-written splitters (unicode_regex_split_custom_gpt2/_llama3), re-stated
// here as plain code-point loops. pagoda runs the regexes on PCRE2 instead; both must cut random
// text (letters and digits of several scripts, Unicode spaces, contractions, marks, emoji) in
// the same places. Categories come from PCRE2's Unicode tables, one code point at a time.
#define PCRE2_CODE_UNIT_WIDTH 8
#include <gtest/gtest.h>
#include <pcre2.h>

#include <random>
#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/utf8.h"

namespace pagoda::tokenizer {
namespace {

struct Flags {
  bool valid = false;
  bool letter = false;
  bool number = false;
  bool space = false;
};

class Categories {
 public:
  Categories() : letter_(compile("^\\p{L}$")), number_(compile("^\\p{N}$")) {}
  ~Categories() {
    pcre2_code_free(letter_);
    pcre2_code_free(number_);
  }
  Flags of(uint32_t cp) const {
    std::string s;
    utf8::append(s, cp);
    Flags f;
    f.valid = true;
    f.letter = matches(letter_, s);
    f.number = matches(number_, s);
    static const uint32_t kSpaces[] = {0x09, 0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,
                                       0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000};
    for (uint32_t w : kSpaces)
      f.space |= cp == w;
    f.space |= cp >= 0x2000 && cp <= 0x200A;
    return f;
  }

 private:
  static pcre2_code* compile(const char* p) {
    int err;
    PCRE2_SIZE off;
    return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p), PCRE2_ZERO_TERMINATED,
                         PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  }
  static bool matches(pcre2_code* re, const std::string& s) {
    pcre2_match_data* md = pcre2_match_data_create(1, nullptr);
    const int rc =
        pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, nullptr);
    pcre2_match_data_free(md);
    return rc >= 0;
  }
  pcre2_code* letter_;
  pcre2_code* number_;
};

std::vector<uint32_t> code_points(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8::valid_sequence_length(s, i);
    out.push_back(utf8::decode(s, i, n));
    i += n;
  }
  return out;
}

// Splits by the oracle, returning word lengths in code points.
std::vector<size_t> oracle_split(const std::vector<uint32_t>& c, const Categories& cats,
                                 bool llama3) {
  const size_t n = c.size();
  std::vector<Flags> fl(n);
  for (size_t i = 0; i < n; ++i)
    fl[i] = cats.of(c[i]);
  auto flags = [&](size_t p) { return p < n ? fl[p] : Flags{}; };
  auto cp = [&](size_t p) { return p < n ? c[p] : 0xFFFFFFFFu; };
  auto lower = [](uint32_t x) { return x >= 'A' && x <= 'Z' ? x + 32 : x; };
  std::vector<size_t> words;
  size_t prev = 0;
  auto add = [&](size_t end) {
    if (end > prev) words.push_back(end - prev);
    prev = end;
  };
  for (size_t pos = 0; pos < n;) {
    const uint32_t x = c[pos];
    const Flags f = flags(pos);
    if (x == '\'' && pos + 1 < n) {
      const uint32_t a = llama3 ? lower(cp(pos + 1)) : cp(pos + 1);
      if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        add(pos += 2);
        continue;
      }
      if (pos + 2 < n) {
        const uint32_t b = llama3 ? lower(cp(pos + 2)) : cp(pos + 2);
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
          add(pos += 3);
          continue;
        }
      }
    }
    if (llama3) {
      if (!(x == '\r' || x == '\n' || f.number) && (f.letter || flags(pos + 1).letter)) {
        ++pos;
        while (flags(pos).letter)
          ++pos;
        add(pos);
        continue;
      }
      if (f.number) {
        size_t ini = pos;
        while (flags(pos).number) {
          if (++pos - ini >= 3) {
            add(pos);
            ini = pos;
          }
        }
        add(pos);
        continue;
      }
    } else {
      const Flags f2 = x == ' ' ? flags(pos + 1) : f;
      if (f2.letter || f2.number) {
        const bool letter = f2.letter;
        pos += x == ' ';
        while (letter ? flags(pos).letter : flags(pos).number)
          ++pos;
        add(pos);
        continue;
      }
    }
    const Flags f2 = x == ' ' ? flags(pos + 1) : f;
    auto other = [](const Flags& g) { return g.valid && !g.space && !g.letter && !g.number; };
    if (other(f2)) {
      pos += x == ' ';
      while (other(flags(pos)))
        ++pos;
      if (llama3) {
        while (cp(pos) == '\r' || cp(pos) == '\n')
          ++pos;
      }
      add(pos);
      continue;
    }
    size_t spaces = 0;
    size_t last_newline_end = 0;
    while (flags(pos + spaces).space) {
      if (cp(pos + spaces) == '\r' || cp(pos + spaces) == '\n') last_newline_end = pos + spaces + 1;
      ++spaces;
    }
    if (llama3 && last_newline_end > 0) {
      add(pos = last_newline_end);
      continue;
    }
    if (spaces > 1 && pos + spaces < n) {
      add(pos += spaces - 1);
      continue;
    }
    if (spaces > 0) {
      add(pos += spaces);
      continue;
    }
    add(++pos);
  }
  return words;
}

TEST(SplitOracleTest, Gpt2AndLlama3MatchLlamaCppSplitters) {
  const Categories cats;
  const std::vector<std::string> alphabet = {"a",
                                             "Z",
                                             "s",
                                             "t",
                                             "re",
                                             "ve",
                                             "ll",
                                             "d",
                                             "m",
                                             "S",
                                             "RE",
                                             "x",
                                             "'",
                                             "'",
                                             "0",
                                             "7",
                                             " ",
                                             " ",
                                             " ",
                                             "\t",
                                             "\n",
                                             "\r",
                                             "\xC2\xA0",
                                             "\xE3\x80\x80",
                                             "\xE2\x80\x83",
                                             ",",
                                             "!",
                                             "$",
                                             "(",
                                             "\xC3\xA9",
                                             "\xCE\xB1",
                                             "\xE4\xB8\xAD",
                                             "\xD9\xA3",
                                             "\xC2\xB2",
                                             "\xE2\x85\xA4",
                                             "\xCC\x81",
                                             "\xE2\x80\x8D",
                                             "\xF0\x9F\xA6\x99",
                                             "\xE2\x82\xAC",
                                             "\xE1\xA0\x8E"};
  auto gpt2 = PreTokenizer::create("gpt-2");
  auto llama3 = PreTokenizer::create("llama-bpe");
  ASSERT_TRUE(gpt2.ok() && llama3.ok());
  std::mt19937 rng(11);
  for (int trial = 0; trial < 4000; ++trial) {
    std::string text;
    for (int k = 0, len = static_cast<int>(rng() % 20); k < len; ++k) {
      text += alphabet[rng() % alphabet.size()];
    }
    const std::vector<uint32_t> cps = code_points(text);
    for (const bool is_llama3 : {false, true}) {
      std::vector<ByteRange> ranges;
      (is_llama3 ? *llama3 : *gpt2)->split(text, ranges);
      std::vector<size_t> got;
      for (const auto& [b, e] : ranges)
        got.push_back(code_points(text.substr(b, e - b)).size());
      EXPECT_EQ(got, oracle_split(cps, cats, is_llama3))
          << (is_llama3 ? "llama3" : "gpt2") << ": '" << text << "'";
    }
  }
}

}  // namespace
}  // namespace pagoda::tokenizer
