// Malformed vocabularies and GGUF tokenizer metadata give a Status naming the problem, never a
// crash; llama.cpp's defaults and text-based special-token inference are applied as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "model/gguf_vocab.h"
#include "test_support.h"
#include "test_vocabs.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {
namespace {

using format::GgufWriter;
using format::GgufWriteValue;
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

// ---- GGUF ------------------------------------------------------------------------------------

GgufWriter spm_writer() {
  GgufWriter w;
  w.set("general.architecture", GgufWriteValue::string("llama"));
  w.set("tokenizer.ggml.model", GgufWriteValue::string("llama"));
  w.set("tokenizer.ggml.tokens",
        GgufWriteValue::string_array({"<unk>", "<s>", "</s>", "a", "b", "ab"}));
  w.set("tokenizer.ggml.scores", GgufWriteValue::array<float>({0, 0, 0, -1, -1, -2}));
  w.set("tokenizer.ggml.token_type", GgufWriteValue::array<int32_t>({2, 3, 3, 1, 1, 1}));
  return w;
}

Result<Vocab> load(const GgufWriter& w) {
  auto bytes = w.to_bytes();
  if (!bytes.ok()) return std::move(bytes).take_status();
  auto file = format::GgufFile::parse(*bytes);
  if (!file.ok()) return std::move(file).take_status();
  return model::load_vocab(**file);
}

TEST(GgufVocabTest, SpmDefaults) {
  auto v = load(spm_writer());
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->kind, VocabKind::kSpm);
  EXPECT_EQ(v->bos_id, 1);
  EXPECT_EQ(v->eos_id, 2);
  EXPECT_EQ(v->unk_id, 0);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_eos);
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_FALSE(v->clean_spaces);
  EXPECT_EQ(v->token_types[0], TokenType::kUnknown);
  EXPECT_FALSE(v->rstrip_special);
}

TEST(GgufVocabTest, KeysOverrideDefaults) {
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.bos_token_id", GgufWriteValue::u32(3));
  w.set("tokenizer.ggml.eos_token_id", GgufWriteValue::i32(4));
  // Out of range: ignored with a warning, as llama.cpp does.
  w.set("tokenizer.ggml.fim_pad_token_id", GgufWriteValue::u32(600));
  w.set("tokenizer.ggml.add_bos_token", GgufWriteValue::boolean(false));
  w.set("tokenizer.ggml.add_space_prefix", GgufWriteValue::boolean(false));
  w.set("general.name", GgufWriteValue::string("Phi3 mini"));
  auto v = load(w);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->bos_id, 3);
  EXPECT_EQ(v->eos_id, 4);
  EXPECT_FALSE(v->fim_pad_id.has_value());
  EXPECT_FALSE(v->add_bos);
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_TRUE(v->rstrip_special);
}

TEST(GgufVocabTest, OutOfRangeSpecialIdsAreIgnored) {
  // llama.cpp loads such files (warning "bad special token") and keeps the default id.
  GgufWriter w = spm_writer();
  w.set("tokenizer.ggml.eos_token_id", GgufWriteValue::u32(600));
  w.set("tokenizer.ggml.padding_token_id", GgufWriteValue::i32(-1));
  w.set("tokenizer.ggml.unknown_token_id", GgufWriteValue::u32(1));
  auto v = load(w);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->eos_id, 2);  // the SPM default
  EXPECT_FALSE(v->pad_id.has_value());
  EXPECT_EQ(v->unk_id, 1);
}

TEST(GgufVocabTest, BpePreTokenizerDefaults) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", GgufWriteValue::string("gpt2"));
  w.set("tokenizer.ggml.tokens", GgufWriteValue::string_array({"a", "b", "ab"}));
  w.set("tokenizer.ggml.merges", GgufWriteValue::string_array({"a b"}));
  w.set("tokenizer.ggml.pre", GgufWriteValue::string("llama-bpe"));
  auto v = load(w);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->kind, VocabKind::kBpe);
  EXPECT_TRUE(v->ignore_merges);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_TRUE(v->clean_spaces);
  w.set("tokenizer.ggml.pre", GgufWriteValue::string("qwen2"));
  v = load(w);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->clean_spaces);
  EXPECT_FALSE(v->add_bos);
  EXPECT_FALSE(v->ignore_merges);
}

TEST(GgufVocabTest, MalformedMetadataIsAStatus) {
  struct Case {
    const char* what;
    std::function<void(GgufWriter&)> edit;
    StatusCode code;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"model missing", [](GgufWriter& w) { w = GgufWriter(); }, StatusCode::kNotFound,
       "tokenizer.ggml.model"},
      {"model not a string",
       [](GgufWriter& w) { w.set("tokenizer.ggml.model", GgufWriteValue::u32(1)); },
       StatusCode::kInvalidArgument, "tokenizer.ggml.model"},
      {"unsupported model",
       [](GgufWriter& w) { w.set("tokenizer.ggml.model", GgufWriteValue::string("bert")); },
       StatusCode::kUnimplemented, "bert"},
      {"tokens not strings",
       [](GgufWriter& w) { w.set("tokenizer.ggml.tokens", GgufWriteValue::array<int32_t>({1})); },
       StatusCode::kInvalidArgument, "tokenizer.ggml.tokens"},
      {"tokens empty",
       [](GgufWriter& w) {
         w.set("tokenizer.ggml.tokens",
               GgufWriteValue::string_array(std::span<const std::string>()));
       },
       StatusCode::kInvalidArgument, "tokenizer.ggml.tokens"},
      {"scores short",
       [](GgufWriter& w) { w.set("tokenizer.ggml.scores", GgufWriteValue::array<float>({0})); },
       StatusCode::kInvalidArgument, "tokenizer.ggml.scores"},
      {"token types long",
       [](GgufWriter& w) {
         w.set("tokenizer.ggml.token_type", GgufWriteValue::array<int32_t>({1, 1, 1, 1, 1, 1, 1}));
       },
       StatusCode::kInvalidArgument, "tokenizer.ggml.token_type"},
      {"bool of wrong type",
       [](GgufWriter& w) { w.set("tokenizer.ggml.add_bos_token", GgufWriteValue::u8(1)); },
       StatusCode::kInvalidArgument, "tokenizer.ggml.add_bos_token"},
      {"id of wrong type",
       [](GgufWriter& w) { w.set("tokenizer.ggml.eos_token_id", GgufWriteValue::string("2")); },
       StatusCode::kInvalidArgument, "tokenizer.ggml.eos_token_id"},
      {"gpt2 without merges",
       [](GgufWriter& w) { w.set("tokenizer.ggml.model", GgufWriteValue::string("gpt2")); },
       StatusCode::kNotFound, "tokenizer.ggml.merges"},
  };
  for (const Case& c : cases) {
    GgufWriter w = spm_writer();
    c.edit(w);
    auto v = load(w);
    ASSERT_FALSE(v.ok()) << c.what;
    EXPECT_EQ(v.status().code(), c.code) << c.what << ": " << v.status().to_string();
    EXPECT_NE(v.status().message().find(c.needle), std::string::npos)
        << c.what << ": " << v.status().to_string();
  }
}

TEST(GgufVocabTest, FixtureVocabularies) {
  PAGODA_REQUIRE_FIXTURE(fixture("tokenizer/ggml-vocab-deepseek-coder.gguf"));
  const Vocab coder = load_gguf_vocab(fixture("tokenizer/ggml-vocab-deepseek-coder.gguf"));
  EXPECT_EQ(coder.pre, "deepseek-coder");
  EXPECT_FALSE(coder.clean_spaces);
  EXPECT_TRUE(coder.add_bos);
  EXPECT_EQ(coder.bos_id, 32013);
  const Vocab gpt2 = load_gguf_vocab(fixture("tokenizer/ggml-vocab-gpt-2.gguf"));
  EXPECT_TRUE(gpt2.clean_spaces);
  EXPECT_FALSE(gpt2.add_bos);
  EXPECT_EQ(gpt2.merges.size(), 50000u);
  const Vocab phi3 = load_gguf_vocab(fixture("tokenizer/ggml-vocab-phi-3.gguf"));
  EXPECT_TRUE(phi3.rstrip_special);
  EXPECT_EQ(phi3.eos_id, 32000);
}

}  // namespace
}  // namespace pagoda::testing
