// GGUF tokenizer metadata → tokenizer::Vocab (loader/gguf_vocab.h): llama.cpp's defaults per
// tokenizer model and pre-tokenizer, keys overriding them, and malformed metadata as a Status
// naming the key, never a crash.
#include "loader/gguf_vocab.h"

#include <gtest/gtest.h>

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "test_support.h"

namespace pagoda::loader {
namespace {

using format::GgufWriter;
using format::GgufWriteValue;
using tokenizer::TokenType;
using tokenizer::Vocab;
using tokenizer::VocabKind;

// A fixture vocabulary (the test has checked that it exists).
Vocab load_fixture(const std::string& rel) {
  auto file = format::GgufFile::open(testing::fixture(rel).string());
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return Vocab();
  auto vocab = load_vocab(**file);
  EXPECT_TRUE(vocab.ok()) << vocab.status().to_string();
  return vocab.ok() ? std::move(vocab).value() : Vocab();
}

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
  return load_vocab(**file);
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
       [](GgufWriter& w) { w.set("tokenizer.ggml.model", GgufWriteValue::string("rwkv")); },
       StatusCode::kUnimplemented, "rwkv"},
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
  PAGODA_REQUIRE_FIXTURE(testing::fixture("tokenizer/ggml-vocab-deepseek-coder.gguf"));
  const Vocab coder = load_fixture("tokenizer/ggml-vocab-deepseek-coder.gguf");
  EXPECT_EQ(coder.pre, "deepseek-coder");
  EXPECT_FALSE(coder.clean_spaces);
  EXPECT_TRUE(coder.add_bos);
  EXPECT_EQ(coder.bos_id, 32013);
  const Vocab gpt2 = load_fixture("tokenizer/ggml-vocab-gpt-2.gguf");
  EXPECT_TRUE(gpt2.clean_spaces);
  EXPECT_FALSE(gpt2.add_bos);
  EXPECT_EQ(gpt2.merges.size(), 50000u);
  const Vocab phi3 = load_fixture("tokenizer/ggml-vocab-phi-3.gguf");
  EXPECT_TRUE(phi3.rstrip_special);
  EXPECT_EQ(phi3.eos_id, 32000);
}

}  // namespace
}  // namespace pagoda::loader
