// Decoding: round trips over the fixture strings, llama.cpp's clean-up passes against a literal
// in-place port of them (the oracle below), and the streaming detokenizer: valid UTF-8 deltas
// (checked by an independent validator) that concatenate to the decoded text.
#include "tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "test_support.h"
#include "test_vocabs.h"
#include "tokenizer/byte_unicode.h"

namespace pagoda::testing {
namespace {

using tokenizer::EncodeOptions;
using tokenizer::IncrementalDetokenizer;
using tokenizer::TokenId;
using tokenizer::Tokenizer;

std::vector<std::string> fixture_strings() {
  const std::string raw = read_file(fixture("tokenizer/ggml-vocab-gpt-2.gguf.inp"));
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) break;
    out.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  // Extra multi-byte material: emoji (4-byte), CJK, combining marks.
  out.push_back(
      "\xF0\x9F\xA6\x99 llama \xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C");
  out.push_back(
      "e\xCC\x81t\xC3\xA9 \xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0"
      "\x9F\x91\xA7 \xE2\x9C\x85!");
  return out;
}

// Independent UTF-8 validity check: decode by the bit patterns, then require the shortest form,
// no surrogates, nothing above U+10FFFF.
bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    int n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 4;
      cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (int k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

// llama_detokenize's clean-up, ported literally (in place, with its '\0' write in pass 2).
std::string oracle_clean(std::string text) {
  int32_t total = static_cast<int32_t>(text.size());
  const int32_t total1 = total;
  total = total ? 1 : 0;
  for (int32_t i = 1; i < total1; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
    text[total++] = x;
  }
  const int32_t total2 = total;
  total = total ? 1 : 0;
  for (int32_t i = 1; i < total2; ++i) {
    const char x = text[i];
    if (x == '\'' && i + 1 < total2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
      total--;
      text[++i] = '\0';
    }
    text[total++] = x;
  }
  const int32_t total3 = total;
  total = total ? 1 : 0;
  for (int32_t i = 1; i < total3; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < total3) {
      const char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') {
        total--;
      } else if (i + 2 < total3 && (x1 == 'r' || x1 == 'v') && text[i + 2] == 'e') {
        total--;
      }
    }
    text[total++] = x;
  }
  text.resize(static_cast<size_t>(total));
  return text;
}

const Tokenizer* fixture_tokenizer(const std::string& name) {
  return load_gguf_tokenizer(fixture("tokenizer/ggml-vocab-" + name + ".gguf"));
}

class DecodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(DecodeTest, RoundTripsFixtureStrings) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-" + GetParam() + ".gguf"));
  const Tokenizer* tok = fixture_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  for (const std::string& s : fixture_strings()) {
    const auto ids = tok->encode(s, {false, false});
    const std::string expected = tok->vocab().clean_spaces ? oracle_clean(s) : s;
    EXPECT_EQ(tok->decode(ids), expected) << GetParam() << ": '" << s << "'";
  }
}

TEST_P(DecodeTest, StreamsValidUtf8ThatConcatenatesToTheText) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-" + GetParam() + ".gguf"));
  const Tokenizer* tok = fixture_tokenizer(GetParam());
  ASSERT_NE(tok, nullptr);
  size_t held_back = 0;
  for (const std::string& s : fixture_strings()) {
    const auto ids = tok->encode(s, {false, false});
    IncrementalDetokenizer detok(*tok);
    std::string streamed;
    for (TokenId id : ids) {
      const std::string delta = detok.push(id);
      ASSERT_TRUE(valid_utf8(delta)) << GetParam() << ": '" << s << "'";
      if (delta.empty() && !tok->token_to_piece(id).empty()) ++held_back;
      streamed += delta;
    }
    streamed += detok.finish();
    EXPECT_EQ(streamed, s) << GetParam();
    EXPECT_EQ(detok.text(), s);
    if (!tok->vocab().clean_spaces) {
      EXPECT_EQ(streamed, tok->decode(ids));
    }
  }
  // Every vocab splits some emoji or CJK character across byte tokens.
  EXPECT_GT(held_back, 0u) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Vocabs, DecodeTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder",
                                           "falcon"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

TEST(CleanSpacesTest, MatchesLlamaCppOnRandomStrings) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-gpt-2.gguf"));
  const Tokenizer* tok = fixture_tokenizer("gpt-2");
  ASSERT_NE(tok, nullptr);
  ASSERT_TRUE(tok->vocab().clean_spaces);
  const std::string alphabet = "  ''smrevtdl?!.,x";
  std::mt19937 rng(5);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string s;
    std::vector<TokenId> ids;
    for (int k = 0, n = static_cast<int>(rng() % 12); k < n; ++k) {
      const char c = alphabet[rng() % alphabet.size()];
      s.push_back(c);
      auto id = tok->find_token(tokenizer::byte_to_unicode(static_cast<uint8_t>(c)));
      ASSERT_TRUE(id.has_value());
      ids.push_back(*id);
    }
    EXPECT_EQ(tok->decode(ids), oracle_clean(s)) << "'" << s << "'";
  }
}

TEST(DetokenizerTest, InvalidBytesBecomeReplacementCharacters) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-llama-spm.gguf"));
  const Tokenizer* tok = fixture_tokenizer("llama-spm");
  ASSERT_NE(tok, nullptr);
  auto byte = [tok](int b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    return *tok->find_token(name);
  };
  IncrementalDetokenizer detok(*tok);
  EXPECT_EQ(detok.push(byte(0xF0)), "");  // could start a 4-byte character
  EXPECT_EQ(detok.push(byte(0x9F)), "");  // still could
  EXPECT_EQ(detok.push(byte('A')),
            "\xEF\xBF\xBD"
            "A");                                     // cannot any more: one U+FFFD
  EXPECT_EQ(detok.push(byte(0x80)), "\xEF\xBF\xBD");  // a stray continuation byte
  EXPECT_EQ(detok.push(byte(0xE4)), "");
  EXPECT_EQ(detok.push(byte(0xB8)), "");
  EXPECT_EQ(detok.push(byte(0xAD)), "\xE4\xB8\xAD");  // 中 completed
  EXPECT_EQ(detok.push(byte(0xE2)), "");
  EXPECT_EQ(detok.finish(), "\xEF\xBF\xBD");  // incomplete at the end
  EXPECT_EQ(detok.text(),
            "\xEF\xBF\xBD"
            "A\xEF\xBF\xBD\xE4\xB8\xAD\xEF\xBF\xBD");
}

TEST(DetokenizerTest, LeadingSpaceFollowsThePrompt) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-llama-spm.gguf"));
  const Tokenizer* tok = fixture_tokenizer("llama-spm");
  ASSERT_NE(tok, nullptr);
  const TokenId there = *tok->find_token("\xE2\x96\x81there");
  const TokenId once = *tok->find_token("\xE2\x96\x81Once");
  const TokenId bos = *tok->vocab().bos_id;
  {
    IncrementalDetokenizer detok(*tok);  // start of the text: the space prefix is dropped
    EXPECT_EQ(detok.push(there), "there");
    EXPECT_EQ(detok.push(there), " there");
  }
  {
    const std::vector<TokenId> prompt = {bos};
    IncrementalDetokenizer detok(*tok, true, prompt);
    EXPECT_EQ(detok.push(there), "there");
  }
  {
    const std::vector<TokenId> prompt = {bos, once};
    IncrementalDetokenizer detok(*tok, true, prompt);
    EXPECT_EQ(detok.push(there), " there");
  }
  {
    IncrementalDetokenizer detok(*tok, /*skip_special=*/false);
    EXPECT_EQ(detok.push(bos), "<s>");
    EXPECT_EQ(detok.push(there), " there");
  }
}

TEST(DecodeSpecialTest, SpecialTokensAndTheFirstSpace) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-llama-spm.gguf"));
  const Tokenizer* tok = fixture_tokenizer("llama-spm");
  ASSERT_NE(tok, nullptr);
  const auto ids = tok->encode("Hello", EncodeOptions{});
  ASSERT_EQ(ids.front(), 1);
  // As llama_detokenize(remove_special=false): BOS is the first token, so "▁Hello" keeps its
  // space; with special=true BOS is shown.
  EXPECT_EQ(tok->decode(ids), " Hello");
  EXPECT_EQ(tok->decode(ids, true), "<s> Hello");
  EXPECT_EQ(tok->decode({ids.begin() + 1, ids.end()}), "Hello");
  EXPECT_EQ(tok->decode({-1, 1 << 30}), "");
  EXPECT_EQ(tok->token_to_piece(-5), "");
}

TEST(DecodeSpecialTest, EndOfGeneration) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-phi-3.gguf"));
  const Tokenizer* spm = fixture_tokenizer("llama-spm");
  const Tokenizer* phi3 = fixture_tokenizer("phi-3");
  const Tokenizer* gpt2 = fixture_tokenizer("gpt-2");
  ASSERT_TRUE(spm && phi3 && gpt2);
  EXPECT_TRUE(spm->is_end_of_generation(2));
  EXPECT_FALSE(spm->is_end_of_generation(1));
  EXPECT_FALSE(spm->is_end_of_generation(-1));
  EXPECT_TRUE(phi3->is_end_of_generation(*phi3->find_token("<|end|>")));
  EXPECT_TRUE(phi3->is_end_of_generation(*phi3->find_token("<|endoftext|>")));
  EXPECT_FALSE(phi3->is_end_of_generation(*phi3->find_token("<|user|>")));
  EXPECT_TRUE(gpt2->is_end_of_generation(50256));
  EXPECT_FALSE(gpt2->is_end_of_generation(50255));
}

}  // namespace
}  // namespace pagoda::testing
