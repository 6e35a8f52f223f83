// The shared fixture models and tokenizer files: every one opens, tensor counts and types match
// what the fixture README says about them, and the data section accounts for every byte of the
// file. Also truncation sweeps (every prefix of a small file, strided prefixes of a real one):
// each must fail cleanly, never crash (run under ASan for the full effect).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "gguf_test_util.h"
#include "test_support.h"

namespace pagoda::format {
namespace {

using tensor::DType;
using testing::Bytes;
using V = GgufWriteValue;

std::unique_ptr<GgufFile> open_fixture(const std::string& rel) {
  auto f = GgufFile::open(pagoda::testing::fixture(rel).string());
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return f.ok() ? std::move(f).value() : nullptr;
}

std::map<DType, int> type_counts(const GgufFile& f) {
  std::map<DType, int> out;
  for (const GgufTensorInfo& t : f.tensors())
    ++out[t.dtype];
  return out;
}

// Independent of the reader's bookkeeping: ggml lays tensors out back to back, each padded to
// the alignment, so the padded sizes must add up to the bytes after the data offset.
void expect_data_section_accounts_for_the_file(const GgufFile& f) {
  uint64_t padded_total = 0;
  for (const GgufTensorInfo& t : f.tensors()) {
    padded_total += (t.size_bytes + f.alignment() - 1) / f.alignment() * f.alignment();
  }
  EXPECT_EQ(f.data_offset() + padded_total, f.bytes().size());
}

// Common checks for the llama-family fixtures (token_embd is [embedding, vocab]).
void expect_llama_layout(const GgufFile& f, const std::string& arch, int per_layer,
                         bool tied_output) {
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(*f.get_string("general.architecture"), arch);
  const uint64_t layers = *f.get_uint(arch + ".block_count");
  const uint64_t embd = *f.get_uint(arch + ".embedding_length");
  EXPECT_EQ(layers, 2u);
  EXPECT_EQ(f.tensors().size(), layers * per_layer + (tied_output ? 2 : 3));
  const uint64_t n_vocab = f.get_string_array("tokenizer.ggml.tokens")->size();
  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->n_dims, 2u);
  EXPECT_EQ(emb->dims[0], embd);
  EXPECT_EQ(emb->dims[1], n_vocab);
  EXPECT_EQ(f.find_tensor("output.weight") == nullptr, tied_output);
  for (const GgufTensorInfo& t : f.tensors()) {
    EXPECT_EQ(t.num_elements, t.dims[0] * t.dims[1] * t.dims[2] * t.dims[3]) << t.name;
    if (t.name.starts_with("blk.")) {
      const uint64_t layer = std::stoull(std::string(t.name.substr(4)));
      EXPECT_LT(layer, layers) << t.name;
    }
    if (t.name.ends_with("_norm.weight")) {
      EXPECT_EQ(t.dtype, DType::kF32) << t.name;
      EXPECT_EQ(t.n_dims, 1u);
      EXPECT_EQ(t.dims[0], embd);
    }
  }
  expect_data_section_accounts_for_the_file(f);
}

TEST(GgufFixtures, LlamaF16) {
  const auto path = pagoda::testing::fixture("models/llama-F16.gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  auto f = open_fixture("models/llama-F16.gguf");
  ASSERT_NE(f, nullptr);
  expect_llama_layout(*f, "llama", 9, false);
  auto types = type_counts(*f);
  EXPECT_EQ(types.size(), 2u);
  EXPECT_EQ(types[DType::kF32], 5);  // 2 x 2 layer norms + output_norm
  EXPECT_EQ(types[DType::kF16], 16);
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.dtype == DType::kF16) {
      EXPECT_EQ(t.size_bytes, 2 * t.num_elements);
    }
  }
  // GQA: k and v project to head_count_kv heads.
  const uint64_t embd = *f->get_uint("llama.embedding_length");
  const uint64_t heads = *f->get_uint("llama.attention.head_count");
  const uint64_t kv_heads = *f->get_uint("llama.attention.head_count_kv");
  EXPECT_EQ(f->find_tensor("blk.0.attn_k.weight")->dims[1], embd / heads * kv_heads);
}

TEST(GgufFixtures, LlamaQuantizedVariants) {
  struct Case {
    const char* file;
    std::set<DType> types;
    DType output;
  };
  const Case cases[] = {
      {"models/llama-Q8_0.gguf", {DType::kF32, DType::kQ8_0}, DType::kQ8_0},
      {"models/llama-Q4_0.gguf", {DType::kF32, DType::kQ4_0, DType::kQ6_K}, DType::kQ6_K},
      {"models/llama-Q4_K_M.gguf", {DType::kF32, DType::kQ4_K, DType::kQ6_K}, DType::kQ6_K},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const auto path = pagoda::testing::fixture(c.file);
    PAGODA_REQUIRE_FIXTURE(path);
    auto f = open_fixture(c.file);
    ASSERT_NE(f, nullptr);
    expect_llama_layout(*f, "llama", 9, false);
    std::set<DType> types;
    for (const auto& [t, n] : type_counts(*f))
      types.insert(t);
    EXPECT_EQ(types, c.types);
    EXPECT_EQ(f->find_tensor("output.weight")->dtype, c.output);
  }
}

TEST(GgufFixtures, LlamaQ4KMHasQ6KForSomeAttnVAndFfnDown) {
  const auto path = pagoda::testing::fixture("models/llama-Q4_K_M.gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  auto f = open_fixture("models/llama-Q4_K_M.gguf");
  ASSERT_NE(f, nullptr);
  int q6k_v_or_down = 0;
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.dtype == DType::kQ6_K &&
        (t.name.ends_with("attn_v.weight") || t.name.ends_with("ffn_down.weight"))) {
      ++q6k_v_or_down;
    }
    if (t.name.ends_with("attn_q.weight")) {
      EXPECT_EQ(t.dtype, DType::kQ4_K);
    }
  }
  EXPECT_GT(q6k_v_or_down, 0);
}

TEST(GgufFixtures, Qwen2) {
  const auto path = pagoda::testing::fixture("models/qwen2-Q8_0.gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  auto f = open_fixture("models/qwen2-Q8_0.gguf");
  ASSERT_NE(f, nullptr);
  expect_llama_layout(*f, "qwen2", 12, true);  // 9 + q/k/v biases
  EXPECT_EQ(f->get_string_array("tokenizer.ggml.tokens")->size(), 50257u);
  EXPECT_GT(f->get_string_array("tokenizer.ggml.merges")->size(), 0u);
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.name.ends_with(".bias")) {
      EXPECT_EQ(t.dtype, DType::kF32) << t.name;
      EXPECT_EQ(t.n_dims, 1u);
    } else if (t.n_dims == 2) {
      EXPECT_EQ(t.dtype, DType::kQ8_0) << t.name;
    }
  }
}

TEST(GgufFixtures, Moe) {
  const auto path = pagoda::testing::fixture("models/moe-Q8_0.gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  auto f = open_fixture("models/moe-Q8_0.gguf");
  ASSERT_NE(f, nullptr);
  // Per layer: norms x2, q/k/v/o, router, gate/up/down experts.
  expect_llama_layout(*f, "llama", 10, true);
  const uint64_t experts = *f->get_uint("llama.expert_count");
  EXPECT_EQ(experts, 4u);
  EXPECT_EQ(*f->get_uint("llama.expert_used_count"), 2u);
  int exps = 0;
  for (const GgufTensorInfo& t : f->tensors()) {
    if (t.name.ends_with("_exps.weight")) {
      ++exps;
      EXPECT_EQ(t.n_dims, 3u) << t.name;
      EXPECT_EQ(t.dims[2], experts) << t.name;
      EXPECT_EQ(t.dtype, DType::kQ8_0) << t.name;
    }
    if (t.name.ends_with("ffn_gate_inp.weight")) {
      EXPECT_EQ(t.dtype, DType::kF32) << t.name;
      EXPECT_EQ(t.dims[1], experts);
    }
  }
  EXPECT_EQ(exps, 6);
}

TEST(GgufFixtures, TokenizerFiles) {
  const auto dir = pagoda::testing::fixture("tokenizer");
  PAGODA_REQUIRE_FIXTURE(dir);
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".gguf") continue;
    SCOPED_TRACE(entry.path().string());
    ++seen;
    auto f = GgufFile::open(entry.path().string());
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    EXPECT_TRUE((*f)->tensors().empty());
    auto tokens = (*f)->get_string_array("tokenizer.ggml.tokens");
    ASSERT_TRUE(tokens.ok());
    EXPECT_GT(tokens->size(), 1000u);
    EXPECT_TRUE((*f)->get_string("tokenizer.ggml.model").ok());
  }
  EXPECT_EQ(seen, 5);
}

// Copy every key bit-exactly and stream every tensor from the mapping, as `pagoda quantize` would:
// the result must be byte-identical to the file llama.cpp's writer produced.
TEST(GgufFixtures, RewriteThroughTheWriterIsByteIdentical) {
  for (const char* rel : {"models/llama-Q4_K_M.gguf", "models/moe-Q8_0.gguf"}) {
    SCOPED_TRACE(rel);
    const auto path = pagoda::testing::fixture(rel);
    PAGODA_REQUIRE_FIXTURE(path);
    auto f = open_fixture(rel);
    ASSERT_NE(f, nullptr);
    GgufWriter w;
    w.set_version(f->version());
    for (const GgufKv& kv : f->metadata()) {
      w.set(std::string(kv.key), GgufWriteValue::copy_of(kv.value));
    }
    for (const GgufTensorInfo& t : f->tensors()) {
      const GgufTensorInfo* src = &t;
      w.add_tensor(std::string(t.name), t.dtype, std::vector<uint64_t>(t.dims, t.dims + t.n_dims),
                   [src](const GgufWriter::ByteSink& sink) -> Status {
                     // In pieces, as a converter producing rows would.
                     const uint64_t piece = 4096;
                     for (uint64_t at = 0; at < src->size_bytes; at += piece) {
                       const uint64_t n = std::min(piece, src->size_bytes - at);
                       PAGODA_RETURN_IF_ERROR(sink(src->bytes().subspan(at, n)));
                     }
                     return Status();
                   });
    }
    auto out = w.to_bytes();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_EQ(out->size(), f->bytes().size());
    EXPECT_TRUE(std::equal(out->begin(), out->end(), f->bytes().begin()));
  }
}

// ---- truncation sweeps ------------------------------------------------------------------------

TEST(GgufTruncation, EveryPrefixOfASmallFile) {
  GgufWriter w;
  w.set("general.architecture", V::string("llama"))
      .set("llama.block_count", V::u32(1))
      .set("tokenizer.ggml.tokens", V::string_array({"a", "bb", "ccc"}))
      .set("tokenizer.ggml.scores", V::array<float>({0, 1, 2}))
      .set("tokenizer.ggml.bos_token_id", V::u32(1))
      .set("flags", V::bool_array({true, false}))
      .set("pi", V::f64(3.14));
  const V inner[] = {V::array<int16_t>({1, 2}), V::string_array({"x"})};
  w.set("nested", V::array_of_arrays(inner));
  w.add_tensor("a", DType::kQ4_K, {256, 2}, Bytes(288, 1));
  w.add_tensor("b", DType::kF16, {3}, Bytes(6, 2));  // last: 26 bytes of padding follow
  auto full = w.to_bytes();
  ASSERT_TRUE(full.ok());
  const size_t size = full->size();
  const size_t last_data_end = size - 26;
  for (size_t n = 0; n <= size; ++n) {
    Bytes prefix(full->begin(), full->begin() + static_cast<std::ptrdiff_t>(n));  // exact size
    auto f = GgufFile::parse(prefix, "prefix");
    if (n >= last_data_end) {
      EXPECT_TRUE(f.ok()) << n << ": " << f.status().to_string();
    } else {
      EXPECT_FALSE(f.ok()) << "prefix of " << n << " bytes was accepted";
      EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << f.status().to_string();
    }
  }
}

TEST(GgufTruncation, StridedPrefixesOfATokenizerFixture) {
  const auto path = pagoda::testing::fixture("tokenizer/ggml-vocab-llama-spm.gguf");
  PAGODA_REQUIRE_FIXTURE(path);
  std::ifstream in(path, std::ios::binary);
  const Bytes full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(full.size(), 100000u);
  ASSERT_TRUE(GgufFile::parse(full).ok());
  // The file ends right after its last value (no tensors, no padding), so every proper prefix
  // is truncated: all of the first 4 KiB, a stride through the middle, all of the last 256.
  std::vector<size_t> lengths;
  for (size_t n = 0; n < 4096; ++n)
    lengths.push_back(n);
  for (size_t n = 4096; n < full.size() - 256; n += 997)
    lengths.push_back(n);
  for (size_t n = full.size() - 256; n < full.size(); ++n)
    lengths.push_back(n);
  for (size_t n : lengths) {
    Bytes prefix(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = GgufFile::parse(prefix, "prefix");
    ASSERT_FALSE(f.ok()) << "prefix of " << n << " bytes was accepted";
  }
}

}  // namespace
}  // namespace pagoda::format
