// SPM and BPE encoders against naive references written here (quadratic "find the best pair,
// merge, repeat" loops), on random vocabularies with score/rank ties; special-token partition,
// BOS/EOS and byte fallback on small hand-made vocabularies with hand-computed answers.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "tokenizer/byte_unicode.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::tokenizer {
namespace {

const std::string kSp = "\xE2\x96\x81";  // ▁

std::vector<std::string> utf8_chars(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<uint8_t>(s[i]);
    size_t n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    n = std::min(n, s.size() - i);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string hex_byte_token(uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
  return buf;
}

// ---- SPM -------------------------------------------------------------------------------------

struct SpmCase {
  Vocab vocab;
  std::map<std::string, TokenId> index;
};

// With `word_tokens`, no token has a ▁ after a non-▁ (SentencePiece's whitespace splitting), which
// lets the encoder merge word by word; otherwise tokens mix ▁ anywhere.
SpmCase random_spm_vocab(std::mt19937& rng, bool word_tokens) {
  SpmCase c;
  Vocab& v = c.vocab;
  v.kind = VocabKind::kSpm;
  auto add = [&](const std::string& text, float score, TokenType type) {
    if (c.index.count(text)) return;
    c.index[text] = static_cast<TokenId>(v.tokens.size());
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.token_types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b)
    add(hex_byte_token(static_cast<uint8_t>(b)), 0, TokenType::kByte);
  const std::vector<std::string> base = {"a", "b", "c", kSp, "\xC3\xA9"};  // é
  for (const auto& s : base)
    add(s, -10, TokenType::kNormal);
  std::uniform_int_distribution<int> pick(0, 3);
  std::uniform_int_distribution<int> score(1, 4);  // few distinct scores: many ties
  for (int i = 0; i < 40; ++i) {
    std::string t;
    const int len = 2 + pick(rng);
    for (int k = 0; k < len; ++k) {
      t += base[static_cast<size_t>(pick(rng) + (k % 2))];
    }
    if (word_tokens) {
      // Keep ▁ only as a leading run: "▁▁ab" yes, "a▁b" no.
      size_t k = 0;
      while (t.compare(k, kSp.size(), kSp) == 0)
        k += kSp.size();
      std::string word = t.substr(0, k);
      for (size_t j = k; j < t.size(); ++j) {
        if (t.compare(j, kSp.size(), kSp) == 0) {
          j += kSp.size() - 1;
        } else {
          word += t[j];
        }
      }
      t = word;
    }
    add(t, -static_cast<float>(score(rng)), TokenType::kNormal);
  }
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return c;
}

// Quadratic reference: merge the best-scoring adjacent pair (leftmost on ties) until none.
std::vector<TokenId> naive_spm(const SpmCase& c, const std::string& escaped) {
  std::vector<std::string> sym = utf8_chars(escaped);
  for (;;) {
    int best = -1;
    float best_score = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = c.index.find(sym[i] + sym[i + 1]);
      if (it == c.index.end()) continue;
      const float s = c.vocab.scores[static_cast<size_t>(it->second)];
      if (best < 0 || s > best_score) {
        best = static_cast<int>(i);
        best_score = s;
      }
    }
    if (best < 0) break;
    sym[static_cast<size_t>(best)] += sym[static_cast<size_t>(best) + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<TokenId> out;
  for (const auto& s : sym) {
    auto it = c.index.find(s);
    if (it != c.index.end()) {
      out.push_back(it->second);
    } else {
      for (char ch : s)
        out.push_back(c.index.at(hex_byte_token(static_cast<uint8_t>(ch))));
    }
  }
  return out;
}

TEST(SpmEncoderTest, MatchesNaiveReferenceOnRandomVocabs) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "c", " ", "\xC3\xA9", "z", "\xE4\xB8\xAD"};
  EncodeOptions opts;
  opts.add_special = false;
  for (int trial = 0; trial < 80; ++trial) {
    SpmCase c = random_spm_vocab(rng, trial % 2 == 0);
    auto tok = Tokenizer::create(c.vocab);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
    for (int s = 0; s < 50; ++s) {
      std::string text;
      const int len = static_cast<int>(rng() % 24);
      for (int k = 0; k < len; ++k)
        text += alphabet[pick(rng)];
      std::string escaped = text.empty() ? "" : kSp;
      for (char ch : text)
        escaped += ch == ' ' ? kSp : std::string(1, ch);
      EXPECT_EQ((*tok)->encode(text, opts), naive_spm(c, escaped)) << "text '" << text << "'";
    }
  }
}

TEST(SpmEncoderTest, HandComputedMergesAndFallback) {
  Vocab v;
  v.kind = VocabKind::kSpm;
  // 0 <unk>, 1 <s>, 2 </s>, 3 ▁, 4 h, 5 i, 6 ▁h, 7 hi, 8 ▁hi
  v.tokens = {"<unk>", "<s>", "</s>", kSp, "h", "i", kSp + "h", "hi", kSp + "hi"};
  v.scores = {0, 0, 0, -1, -1, -1, -2, -1.5f, -3};
  v.token_types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl};
  v.token_types.resize(v.tokens.size(), TokenType::kNormal);
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  v.add_bos = true;
  auto tok = Tokenizer::create(v);
  ASSERT_TRUE(tok.ok());
  // "▁hi": pairs ▁h (-2) and hi (-1.5): hi wins, then ▁+hi (-3) → ▁hi.
  EXPECT_EQ((*tok)->encode("hi", EncodeOptions{}), (std::vector<TokenId>{1, 8}));
  // No byte tokens: unknown characters become <unk>, one per byte.
  EXPECT_EQ((*tok)->encode("h\xC3\xA9", {false, false}), (std::vector<TokenId>{6, 0, 0}));
  // A raw fragment after a special token gets the space prefix again.
  EXPECT_EQ((*tok)->encode("hi</s>hi", {false, true}), (std::vector<TokenId>{8, 2, 8}));
  // parse_special=false: control token text is plain text (here: all unknown bytes).
  EXPECT_EQ((*tok)->encode("</s>", {false, false}).size(), 5u);
}

// ---- BPE -------------------------------------------------------------------------------------

struct BpeCase {
  Vocab vocab;
  std::map<std::string, TokenId> index;
  std::map<std::string, int> ranks;  // "x y" → rank
};

BpeCase random_bpe_vocab(std::mt19937& rng) {
  BpeCase c;
  Vocab& v = c.vocab;
  v.kind = VocabKind::kBpe;
  v.pre = "gpt-2";
  auto add = [&](const std::string& text) {
    if (c.index.count(text)) return;
    c.index[text] = static_cast<TokenId>(v.tokens.size());
    v.tokens.push_back(text);
  };
  for (int b = 0; b < 256; ++b)
    add(std::string(byte_to_unicode(static_cast<uint8_t>(b))));
  // Merge candidates built from the mapped symbols of "a", "b", "é" (2 bytes: Ã ©).
  std::vector<std::string> pool = {"a", "b", std::string(byte_to_unicode(0xC3)),
                                   std::string(byte_to_unicode(0xA9))};
  for (int i = 0; i < 30; ++i) {
    const std::string& x = pool[rng() % pool.size()];
    const std::string& y = pool[rng() % pool.size()];
    const std::string merge = x + " " + y;
    if (c.ranks.count(merge)) continue;
    c.ranks[merge] = static_cast<int>(v.merges.size());
    v.merges.push_back(merge);
    add(x + y);
    pool.push_back(x + y);
  }
  return c;
}

std::vector<TokenId> naive_bpe_word(const BpeCase& c, const std::string& word) {
  std::vector<std::string> sym;
  for (char ch : word)
    sym.emplace_back(byte_to_unicode(static_cast<uint8_t>(ch)));
  for (;;) {
    int best = -1;
    int best_rank = 0;
    for (size_t i = 0; i + 1 < sym.size(); ++i) {
      auto it = c.ranks.find(sym[i] + " " + sym[i + 1]);
      if (it == c.ranks.end()) continue;
      if (best < 0 || it->second < best_rank) {
        best = static_cast<int>(i);
        best_rank = it->second;
      }
    }
    if (best < 0) break;
    sym[static_cast<size_t>(best)] += sym[static_cast<size_t>(best) + 1];
    sym.erase(sym.begin() + best + 1);
  }
  std::vector<TokenId> out;
  for (const auto& s : sym)
    out.push_back(c.index.at(s));
  return out;
}

TEST(BpeEncoderTest, MatchesNaiveReferenceOnRandomVocabs) {
  std::mt19937 rng(99);
  const std::vector<std::string> letters = {"a", "b", "\xC3\xA9"};
  for (int trial = 0; trial < 40; ++trial) {
    BpeCase c = random_bpe_vocab(rng);
    auto tok = Tokenizer::create(c.vocab);
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    for (int s = 0; s < 50; ++s) {
      // One word of letters (the GPT-2 pattern keeps it whole), optionally two words.
      std::string w1, w2;
      for (int k = 0, n = 1 + static_cast<int>(rng() % 16); k < n; ++k)
        w1 += letters[rng() % 3];
      for (int k = 0, n = static_cast<int>(rng() % 6); k < n; ++k)
        w2 += letters[rng() % 3];
      std::vector<TokenId> expected = naive_bpe_word(c, w1);
      std::string text = w1;
      if (!w2.empty()) {
        text += " " + w2;
        for (TokenId id : naive_bpe_word(c, " " + w2))
          expected.push_back(id);
      }
      EXPECT_EQ((*tok)->encode(text, {false, false}), expected) << "text '" << text << "'";
    }
  }
}

Vocab tiny_bpe_vocab() {
  Vocab v;
  v.kind = VocabKind::kBpe;
  v.pre = "gpt-2";
  for (int b = 0; b < 256; ++b)
    v.tokens.emplace_back(byte_to_unicode(static_cast<uint8_t>(b)));
  v.token_types.assign(256, TokenType::kNormal);
  auto add = [&v](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.token_types.push_back(type);
    return static_cast<TokenId>(v.tokens.size() - 1);
  };
  add("<|endoftext|>", TokenType::kControl);  // 256
  add("<|im_end|>", TokenType::kNormal);      // 257: forced to control (EOG text)
  add("ab", TokenType::kUserDefined);         // 258
  add("bcd", TokenType::kUserDefined);        // 259
  add("\xC4\xA0hi", TokenType::kNormal);      // 260 "Ġhi"
  v.merges = {"h i", "\xC4\xA0 hi"};
  add("hi", TokenType::kNormal);  // 261
  v.bos_id = 256;
  v.eos_id = 256;
  return v;
}

TEST(BpeEncoderTest, SpecialTokensLongestFirstAsLlamaCpp) {
  auto tok = Tokenizer::create(tiny_bpe_vocab());
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  const EncodeOptions plain{false, false};
  const EncodeOptions special{false, true};
  // "bcd" (longer) is claimed before "ab", which then overlaps it: 'a' stays raw text.
  EXPECT_EQ((*tok)->encode("abcd", plain), (std::vector<TokenId>{'a', 259}));
  // User-defined tokens are matched even with parse_special=false; control ones only with it.
  EXPECT_EQ((*tok)->encode("ab<|endoftext|>", plain).size(), 1u + 13u);
  EXPECT_EQ((*tok)->encode("ab<|endoftext|>", special), (std::vector<TokenId>{258, 256}));
  EXPECT_EQ((*tok)->encode(" hi<|im_end|>", special), (std::vector<TokenId>{260, 257}));
  EXPECT_TRUE((*tok)->is_control(257));
  EXPECT_TRUE((*tok)->is_end_of_generation(257));
  EXPECT_TRUE((*tok)->is_end_of_generation(256));
  EXPECT_FALSE((*tok)->is_end_of_generation(258));
  // BPE default: no BOS unless the vocab asks.
  EXPECT_EQ((*tok)->encode("hi", EncodeOptions{}), (std::vector<TokenId>{261}));
}

TEST(BpeEncoderTest, AddBosAndEos) {
  Vocab v = tiny_bpe_vocab();
  v.add_bos = true;
  v.add_eos = true;
  auto tok = Tokenizer::create(v);
  ASSERT_TRUE(tok.ok());
  EXPECT_EQ((*tok)->encode("hi", EncodeOptions{}), (std::vector<TokenId>{256, 261, 256}));
  EXPECT_EQ((*tok)->encode("hi", {false, true}), (std::vector<TokenId>{261}));
  EXPECT_EQ((*tok)->encode("", EncodeOptions{}), (std::vector<TokenId>{256, 256}));
}

TEST(BpeEncoderTest, InvalidUtf8BytesEncodeAsByteTokens) {
  auto tok = Tokenizer::create(tiny_bpe_vocab());
  ASSERT_TRUE(tok.ok());
  // Each invalid byte is its own word: its byte token.
  EXPECT_EQ((*tok)->encode("h\xFFi", {false, false}), (std::vector<TokenId>{'h', 0xFF, 'i'}));
  EXPECT_EQ((*tok)->decode((*tok)->encode("x\xC3(\x80", {false, false})), "x\xC3(\x80");
}

TEST(BpeEncoderTest, RstripSpecialDropsFollowingWhitespace) {
  Vocab v = tiny_bpe_vocab();
  v.rstrip_special = true;
  auto tok = Tokenizer::create(v);
  ASSERT_TRUE(tok.ok());
  // <|im_end|> strips; <|endoftext|> never does (llama.cpp's Phi-3 exceptions).
  EXPECT_EQ((*tok)->encode("<|im_end|> \n hi", {false, true}), (std::vector<TokenId>{257, 261}));
  EXPECT_EQ((*tok)->encode("<|endoftext|> hi", {false, true}), (std::vector<TokenId>{256, 260}));
}

}  // namespace
}  // namespace pagoda::tokenizer
