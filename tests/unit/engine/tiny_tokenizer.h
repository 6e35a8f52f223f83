// A real (if tiny) SentencePiece-style tokenizer for engine tests: <unk>, <s>, </s>, the 256 byte
// tokens <0x00>..<0xFF>, then a few word pieces ("▁Hello", "lo", ...). Built through
// Tokenizer::create, so token_to_piece / decode are the production code paths, and byte tokens
// let a test split a multi-byte UTF-8 character across tokens.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagoda::engine::testing {

inline constexpr int32_t kTinyBos = 1;
inline constexpr int32_t kTinyEos = 2;
inline constexpr int32_t kTinyFirstByte = 3;  // <0x00>

inline const std::vector<std::string>& tiny_words() {
  static const std::vector<std::string> words = [] {
    const std::string sp = "\xe2\x96\x81";  // ▁
    return std::vector<std::string>{sp + "Hello", sp + "world", "lo", sp + "wor", "ld", "!",
                                    sp + "the",   "STOP",       "ST", "OP",       sp,   "a",
                                    "b",          "c",          "ab", sp + "end", ".",  sp + "S",
                                    "x",          "y",          "z",  "xy",       "yz"};
  }();
  return words;
}

inline std::unique_ptr<tokenizer::Tokenizer> make_tiny_tokenizer() {
  tokenizer::Vocab v;
  v.kind = tokenizer::VocabKind::kSpm;
  const auto add = [&v](std::string text, tokenizer::TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(0.0f);
    v.token_types.push_back(type);
  };
  add("<unk>", tokenizer::TokenType::kUnknown);
  add("<s>", tokenizer::TokenType::kControl);
  add("</s>", tokenizer::TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    add(buf, tokenizer::TokenType::kByte);
  }
  for (const std::string& w : tiny_words())
    add(w, tokenizer::TokenType::kNormal);
  v.unk_id = 0;
  v.bos_id = kTinyBos;
  v.eos_id = kTinyEos;
  v.add_bos = true;
  v.add_space_prefix = true;
  auto t = tokenizer::Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return std::move(t).value();
}

inline int32_t byte_token(uint8_t b) {
  return kTinyFirstByte + b;
}

// Id of a word piece, written with a plain space for "▁".
inline int32_t word_token(const tokenizer::Tokenizer& t, const std::string& word) {
  std::string raw;
  for (const char c : word) {
    if (c == ' ') {
      raw += "\xe2\x96\x81";
    } else {
      raw += c;
    }
  }
  const auto id = t.find_token(raw);
  EXPECT_TRUE(id.has_value()) << "no token " << word;
  return id.value_or(0);
}

}  // namespace pagoda::engine::testing
