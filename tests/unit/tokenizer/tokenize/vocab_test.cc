// Malformed vocabularies give a Status naming the problem, never a crash; text-based
// special-token inference is applied as documented (GGUF tokenizer metadata: tests/unit/loader).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "test_support.h"
#include "test_vocabs.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {
namespace {

using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::VocabKind;

Vocab small_spm() {
  Vocab v;
  v.kind = VocabKind::kSpm;
  v.tokens = {"<unk>", "<s>", "</s>", "a", "b", "ab"};
  v.scores = {0, 0, 0, -1, -1, -2};
  v.token_types = {TokenType::kUnknown, TokenType::kControl, TokenType::kControl,
                   TokenType::kNormal,  TokenType::kNormal,  TokenType::kNormal};
  v.bos_id = 1;
  v.eos_id = 2;
  v.unk_id = 0;
  return v;
}

void expect_error(const Vocab& v, StatusCode code, const std::string& needle) {
  auto tok = tokenizer::Tokenizer::create(v);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), code) << tok.status().to_string();
  EXPECT_NE(tok.status().message().find(needle), std::string::npos) << tok.status().to_string();
}

TEST(VocabValidationTest, RejectsMalformedVocabularies) {
  EXPECT_TRUE(tokenizer::Tokenizer::create(small_spm()).ok());
  {
    Vocab v;
    expect_error(v, StatusCode::kInvalidArgument, "empty");
  }
  {
    Vocab v = small_spm();
    v.scores.pop_back();
    expect_error(v, StatusCode::kInvalidArgument, "scores");
  }
  {
    Vocab v = small_spm();
    v.scores[4] = std::numeric_limits<float>::quiet_NaN();
    expect_error(v, StatusCode::kInvalidArgument, "scores[4]");
  }
  {
    Vocab v = small_spm();
    v.token_types.push_back(TokenType::kNormal);
    expect_error(v, StatusCode::kInvalidArgument, "token_types");
  }
  {
    Vocab v = small_spm();
    v.token_types[3] = static_cast<TokenType>(9);
    expect_error(v, StatusCode::kInvalidArgument, "token_types[3]");
  }
  {
    Vocab v = small_spm();
    v.bos_id = 6;
    expect_error(v, StatusCode::kOutOfRange, "bos_id");
  }
  {
    Vocab v = small_spm();
    v.eot_id = -1;
    expect_error(v, StatusCode::kOutOfRange, "eot_id");
  }
  {
    Vocab v = small_spm();
    v.extra_eog_ids = {3, 100};
    expect_error(v, StatusCode::kOutOfRange, "extra_eog_ids[1]");
  }
  {
    Vocab v = small_spm();
    v.tokens[4] = "a";
    expect_error(v, StatusCode::kInvalidArgument, "tokens[4] repeats tokens[3]");
  }
}

TEST(VocabValidationTest, RejectsBadMerges) {
  Vocab v;
  v.kind = VocabKind::kBpe;
  v.pre = "gpt-2";
  v.tokens = {"a", "b", "ab"};
  v.merges = {"a b", "ab"};
  expect_error(v, StatusCode::kInvalidArgument, "merges[1]");
  v.merges = {""};
  expect_error(v, StatusCode::kInvalidArgument, "merges[0]");
  v.merges = {" b"};  // the separator is searched from the second byte: no space there
  expect_error(v, StatusCode::kInvalidArgument, "merges[0]");
  v.merges = {"a b"};
  EXPECT_TRUE(tokenizer::Tokenizer::create(v).ok());
}

TEST(VocabValidationTest, RepairsWhatLlamaCppRepairs) {
  Vocab v = small_spm();
  v.tokens[4] = "";
  v.add_eos = true;
  v.eos_id.reset();
  auto tok = tokenizer::Tokenizer::create(v);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  EXPECT_EQ((*tok)->vocab().tokens[4], "[EMPTY_4]");
  EXPECT_FALSE((*tok)->vocab().add_eos);
}

TEST(SpecialTokensTest, InfersEndOfTurnAndFimFromText) {
  Vocab v = small_spm();
  for (const char* t : {"<|eot_id|>", "<|eom_id|>", "<|fim_prefix|>", "<|file_sep|>", "<EOT>"}) {
    v.tokens.push_back(t);
    v.scores.push_back(0);
    v.token_types.push_back(TokenType::kNormal);
  }
  tokenizer::infer_special_tokens(v);
  EXPECT_EQ(v.eot_id, 6);
  EXPECT_EQ(v.eom_id, 7);
  EXPECT_EQ(v.fim_pre_id, 8);
  EXPECT_EQ(v.fim_sep_id, 9);
  for (int id : {6, 7, 8, 9, 10})
    EXPECT_EQ(v.token_types[id], TokenType::kControl) << id;
  const Vocab once = v;
  tokenizer::infer_special_tokens(v);  // idempotent
  EXPECT_EQ(v.extra_eog_ids, once.extra_eog_ids);
  auto tok = tokenizer::Tokenizer::create(v);
  ASSERT_TRUE(tok.ok());
  for (int id : {2, 6, 7, 9, 10})
    EXPECT_TRUE((*tok)->is_end_of_generation(id)) << id;
  for (int id : {1, 3, 8})
    EXPECT_FALSE((*tok)->is_end_of_generation(id)) << id;
}

}  // namespace
}  // namespace pagoda::testing
