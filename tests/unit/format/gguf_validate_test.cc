// Checks of well-known keys: one bad value per rule on top of a valid llama-like file; each error
// must name the key and its file offset (found by searching the image).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "format/gguf_file.h"
#include "format/gguf_validate.h"
#include "format/gguf_writer.h"
#include "gguf_test_util.h"

namespace pagoda::format {
namespace {

using testing::Bytes;
using testing::record_offset;
using V = GgufWriteValue;

GgufWriter llama_like() {
  GgufWriter w;
  w.set("general.architecture", V::string("llama"))
      .set("llama.block_count", V::u32(2))
      .set("llama.context_length", V::u32(2048))
      .set("llama.embedding_length", V::u32(256))
      .set("llama.feed_forward_length", V::u32(768))
      .set("llama.attention.head_count", V::u32(4))
      .set("llama.attention.head_count_kv", V::u32(2))
      .set("tokenizer.ggml.tokens", V::string_array({"<unk>", "<s>", "</s>", "a", "b"}))
      .set("tokenizer.ggml.scores", V::array<float>({0, 0, 0, -1, -2}))
      .set("tokenizer.ggml.token_type", V::array<int32_t>({2, 3, 3, 1, 1}))
      .set("tokenizer.ggml.merges", V::string_array({"a b"}))
      .set("tokenizer.ggml.bos_token_id", V::u32(1))
      .set("tokenizer.ggml.eos_token_id", V::u32(2))
      .set("tokenizer.ggml.unknown_token_id", V::u32(0))
      .set("tokenizer.ggml.padding_token_id", V::u32(0))
      .set("tokenizer.ggml.seperator_token_id", V::u32(4))
      .set("tokenizer.ggml.eot_token_id", V::u32(2))
      .set("tokenizer.ggml.eom_token_id", V::u32(2));
  return w;
}

std::string error_of(const GgufWriter& w) {
  auto b = w.to_bytes();
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return testing::parse_error(*b);
}

// Expects `w` to fail validation with an error naming `key` at its offset and containing
// `detail`.
void expect_invalid(const GgufWriter& w, std::string_view key, std::string_view detail) {
  auto b = w.to_bytes();
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  const std::string msg = testing::parse_error(*b);
  ASSERT_FALSE(msg.empty()) << "accepted: " << key << " / " << detail;
  const std::string where = fmt::format("key '{}' (at offset {})", key, record_offset(*b, key));
  EXPECT_NE(msg.find(where), std::string::npos) << "missing \"" << where << "\" in: " << msg;
  EXPECT_NE(msg.find(detail), std::string::npos) << "missing \"" << detail << "\" in: " << msg;
}

TEST(GgufValidate, LlamaLikeFileIsValid) {
  EXPECT_EQ(error_of(llama_like()), "");
}

TEST(GgufValidate, FilesWithoutWellKnownKeysAreValid) {
  GgufWriter w;
  w.set("general.architecture", V::string("clip")).set("clip.whatever", V::u32(0));
  EXPECT_EQ(error_of(w), "");
  EXPECT_EQ(error_of(GgufWriter()), "");
}

TEST(GgufValidate, TokensMustBeANonEmptyStringArray) {
  expect_invalid(llama_like().set("tokenizer.ggml.tokens", V::array<int32_t>({1, 2, 3, 4, 5})),
                 "tokenizer.ggml.tokens", "must be an array of string");
  expect_invalid(llama_like().set("tokenizer.ggml.tokens", V::string("abc")),
                 "tokenizer.ggml.tokens", "must be an array of string");
  expect_invalid(llama_like().set("tokenizer.ggml.tokens", V::string_array({})),
                 "tokenizer.ggml.tokens", "empty");
}

TEST(GgufValidate, ScoresMustBeFloat32OnePerToken) {
  expect_invalid(llama_like().set("tokenizer.ggml.scores", V::array<double>({0, 0, 0, 0, 0})),
                 "tokenizer.ggml.scores", "array of float32");
  expect_invalid(llama_like().set("tokenizer.ggml.scores", V::array<float>({0, 0, 0, 0})),
                 "tokenizer.ggml.scores", "has 4 entries but tokenizer.ggml.tokens has 5");
}

TEST(GgufValidate, TokenTypesMustBeInt32OnePerToken) {
  expect_invalid(llama_like().set("tokenizer.ggml.token_type", V::array<uint32_t>({1, 1, 1, 1, 1})),
                 "tokenizer.ggml.token_type", "array of int32");
  expect_invalid(
      llama_like().set("tokenizer.ggml.token_type", V::array<int32_t>({1, 1, 1, 1, 1, 1})),
      "tokenizer.ggml.token_type", "has 6 entries");
}

TEST(GgufValidate, MergesMustBeAStringArray) {
  expect_invalid(llama_like().set("tokenizer.ggml.merges", V::array<int32_t>({1})),
                 "tokenizer.ggml.merges", "array of string");
}

TEST(GgufValidate, SpecialTokenIdsMustBeIntegers) {
  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                          "tokenizer.ggml.seperator_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    SCOPED_TRACE(key);
    expect_invalid(llama_like().set(key, V::string("1")), key, "must be an integer");
    EXPECT_EQ(error_of(llama_like().set(key, V::i64(4))), "");  // any integer type that fits
    // Outside the vocabulary: accepted here; the vocabulary loader ignores it with a warning
    // (GgufVocabTest.OutOfRangeSpecialIdsAreIgnored), as llama.cpp does.
    EXPECT_EQ(error_of(llama_like().set(key, V::u32(5))), "");
    EXPECT_EQ(error_of(llama_like().set(key, V::i32(-1))), "");
  }
}

TEST(GgufValidate, ArchitectureMustBeANonEmptyString) {
  expect_invalid(llama_like().set("general.architecture", V::u32(1)), "general.architecture",
                 "must be a string");
  expect_invalid(llama_like().set("general.architecture", V::string("")), "general.architecture",
                 "empty");
}

// Hyper-parameter keys are judged here only as the format goes (integers; per-layer arrays of
// integers, one entry per layer). Their values (positive, bounded, consistent) belong to the
// model config: tests/unit/loader/config_bounds_test.cc.
TEST(GgufValidate, HyperParametersMustBeIntegers) {
  for (const char* key :
       {"llama.block_count", "llama.context_length", "llama.embedding_length",
        "llama.feed_forward_length", "llama.attention.head_count", "llama.attention.head_count_kv",
        "llama.attention.key_length", "llama.attention.value_length", "llama.expert_count",
        "llama.expert_used_count"}) {
    SCOPED_TRACE(key);
    expect_invalid(llama_like().set(key, V::string("4")), key, "expected an integer");
    expect_invalid(llama_like().set(key, V::f32(4)), key, "expected an integer");
    // Values are not the format's business.
    EXPECT_EQ(error_of(llama_like().set(key, V::u32(0))), "");
    EXPECT_EQ(error_of(llama_like().set(key, V::u64(uint64_t{1} << 40))), "");
  }
  // block_count is one number, never a per-layer array.
  expect_invalid(llama_like().set("llama.block_count", V::array<uint32_t>({2})),
                 "llama.block_count", "expected an integer");
}

TEST(GgufValidate, PerLayerArrays) {
  // Some architectures vary heads or ffn size per layer (0 = no attention / no ffn there).
  EXPECT_EQ(error_of(llama_like()
                         .set("llama.attention.head_count", V::array<int32_t>({4, 8}))
                         .set("llama.attention.head_count_kv", V::array<int32_t>({2, 0}))
                         .set("llama.feed_forward_length", V::array<uint32_t>({768, 0}))),
            "");
  expect_invalid(llama_like().set("llama.feed_forward_length", V::array<uint32_t>({1, 2, 3})),
                 "llama.feed_forward_length",
                 "per-layer array has 3 entries but llama.block_count is 2");
  expect_invalid(llama_like().set("llama.attention.head_count", V::array<int32_t>({})),
                 "llama.attention.head_count", "per-layer array has 0 entries");
  expect_invalid(llama_like().set("llama.attention.head_count", V::array<float>({4, 4})),
                 "llama.attention.head_count", "expected an integer or an array of integers");
}

TEST(GgufValidate, ValidateDirectly) {
  auto b = llama_like().to_bytes();
  ASSERT_TRUE(b.ok());
  auto f = GgufFile::parse(*b);
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(validate_gguf_metadata(**f).ok());
}

}  // namespace
}  // namespace pagoda::format
