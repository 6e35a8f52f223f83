// `pagoda synth`: the files it writes load and run, hold exactly the requested shapes and the
// vocab's tokenizer, are deterministic for a seed, round F32 -> F16 exactly, have the intended
// weight statistics, and carry Llama-3 rope factors computed like llama.cpp's converter.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numbers>

#include "convert/shapes/model_shape.h"
#include "format/gguf_file.h"
#include "kernels/quant.h"
#include "tensor/float16.h"
#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using testing::run_pagoda;
using testing::scratch_dir;

std::string vocab_path() {
  return testing::fixture("tokenizer/ggml-vocab-llama-spm.gguf").string();
}

// Synthesizes once per (shape, type, seed, extra args) into the scratch folder.
std::string synth(const std::string& shape, const std::string& type, int seed,
                  std::vector<std::string> extra = {}) {
  std::string name = shape + "-" + type + "-" + std::to_string(seed);
  for (const auto& e : extra)
    name += e;
  const fs::path out = scratch_dir() / (name + ".gguf");
  if (fs::exists(out)) return out.string();
  std::vector<std::string> args = {"synth",   "--shape",    shape,
                                   "--vocab", vocab_path(), "--type",
                                   type,      "--seed",     std::to_string(seed),
                                   "-o",      out.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return out.string();
}

std::vector<float> values(const format::GgufTensorInfo& t) {
  std::vector<float> out(static_cast<size_t>(t.num_elements));
  kernels::dequantize_row(t.dtype, t.data, out.data(), static_cast<int64_t>(t.num_elements));
  return out;
}

class SynthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_FIXTURE(vocab_path());
    ASSERT_TRUE(fs::exists(testing::pagoda_binary())) << testing::pagoda_binary();
  }
};

TEST_F(SynthTest, TinyHasTheShapeAndTheVocab) {
  auto f = format::GgufFile::open(synth("tiny", "F16", 1));
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  auto vocab = format::GgufFile::open(vocab_path());
  ASSERT_TRUE(vocab.ok());
  EXPECT_EQ(*(*f)->get_string("general.architecture"), "llama");
  EXPECT_EQ(*(*f)->get_uint("llama.block_count"), 2u);
  EXPECT_EQ(*(*f)->get_uint("llama.embedding_length"), 256u);
  EXPECT_EQ(*(*f)->get_uint("llama.attention.head_count_kv"), 2u);
  EXPECT_EQ(*(*f)->get_uint("general.file_type"), 1u);
  // Every tokenizer key of the vocab, byte for byte.
  size_t copied = 0;
  for (const auto& kv : (*vocab)->metadata()) {
    if (!kv.key.starts_with("tokenizer.")) continue;
    const auto* mine = (*f)->find(kv.key);
    ASSERT_NE(mine, nullptr) << kv.key;
    EXPECT_EQ(mine->type, kv.value.type) << kv.key;
    EXPECT_EQ(mine->count, kv.value.count) << kv.key;
    EXPECT_EQ(mine->str, kv.value.str) << kv.key;
    EXPECT_TRUE(
        std::equal(mine->raw.begin(), mine->raw.end(), kv.value.raw.begin(), kv.value.raw.end()))
        << kv.key;
    ++copied;
  }
  EXPECT_GE(copied, 5u);
  const auto* emb = (*f)->find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dtype, tensor::DType::kF16);
  EXPECT_EQ(emb->dims[0], 256u);
  EXPECT_EQ(emb->dims[1], 32000u);  // the vocab's size
  EXPECT_EQ((*f)->find_tensor("blk.0.attn_norm.weight")->dtype, tensor::DType::kF32);
  EXPECT_EQ((*f)->find_tensor("blk.1.attn_k.weight")->dims[1], 128u);
  EXPECT_NE((*f)->find_tensor("output.weight"), nullptr);
  EXPECT_EQ((*f)->tensors().size(), 3u + 2u * 9u);
}

TEST_F(SynthTest, WeightStatistics) {
  auto f = format::GgufFile::open(synth("tiny", "F32", 1));
  ASSERT_TRUE(f.ok());
  auto moments = [](const std::vector<float>& v) {
    double s = 0, s2 = 0, mx = 0;
    for (float x : v) {
      s += x;
      s2 += double(x) * x;
      mx = std::max(mx, std::abs(double(x)));
    }
    const double n = static_cast<double>(v.size());
    return std::array<double, 3>{s / n, std::sqrt(s2 / n - (s / n) * (s / n)), mx};
  };
  const auto emb = moments(values(*(*f)->find_tensor("token_embd.weight")));
  EXPECT_NEAR(emb[0], 0.0, 1e-4);
  EXPECT_NEAR(emb[1], 0.02, 0.0005);
  EXPECT_LT(emb[2], 0.02 * 3.5);  // a sum of 4 uniforms is bounded at sqrt(12) sigma
  const auto norm = moments(values(*(*f)->find_tensor("output_norm.weight")));
  EXPECT_NEAR(norm[0], 1.0, 0.01);
  EXPECT_LT(norm[1], 0.05);
}

TEST_F(SynthTest, F16IsTheF32FileRounded) {
  auto f32 = format::GgufFile::open(synth("tiny", "F32", 3));
  auto f16 = format::GgufFile::open(synth("tiny", "F16", 3));
  auto bf16 = format::GgufFile::open(synth("tiny", "BF16", 3));
  ASSERT_TRUE(f32.ok() && f16.ok() && bf16.ok());
  ASSERT_EQ((*f32)->tensors().size(), (*f16)->tensors().size());
  EXPECT_EQ(*(*bf16)->get_uint("general.file_type"), 32u);
  for (const auto& t : (*f32)->tensors()) {
    const auto* h = (*f16)->find_tensor(t.name);
    const auto* b = (*bf16)->find_tensor(t.name);
    ASSERT_NE(h, nullptr);
    ASSERT_NE(b, nullptr);
    const auto* src = reinterpret_cast<const float*>(t.data);
    if (h->dtype == tensor::DType::kF32) {  // norms stay F32 and identical
      EXPECT_EQ(std::memcmp(h->data, t.data, t.size_bytes), 0) << t.name;
      continue;
    }
    ASSERT_EQ(h->dtype, tensor::DType::kF16);
    ASSERT_EQ(b->dtype, tensor::DType::kBF16);
    size_t mismatches = 0;
    for (uint64_t i = 0; i < t.num_elements; ++i) {
      uint16_t hv, bv;
      std::memcpy(&hv, h->data + 2 * i, 2);
      std::memcpy(&bv, b->data + 2 * i, 2);
      mismatches += hv != tensor::fp32_to_fp16(src[i]);
      mismatches += bv != tensor::fp32_to_bf16(src[i]);
    }
    EXPECT_EQ(mismatches, 0u) << t.name;
  }
}

TEST_F(SynthTest, DeterministicForASeed) {
  const std::string a = synth("tiny", "F16", 5);
  const std::string b = synth("tiny", "F16", 5, {"--threads", "1"});
  const std::string c = synth("tiny", "F16", 6);
  auto read = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read(a), read(b));
  auto fa = format::GgufFile::open(a);
  auto fc = format::GgufFile::open(c);
  ASSERT_TRUE(fa.ok() && fc.ok());
  const auto* ta = (*fa)->find_tensor("blk.0.attn_q.weight");
  const auto* tc = (*fc)->find_tensor("blk.0.attn_q.weight");
  EXPECT_NE(std::memcmp(ta->data, tc->data, ta->size_bytes), 0);
}

TEST_F(SynthTest, LayersOverride) {
  auto f = format::GgufFile::open(synth("mixtral-tiny", "F16", 1, {"--layers", "1"}));
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*(*f)->get_uint("llama.block_count"), 1u);
  EXPECT_EQ(*(*f)->get_uint("llama.expert_count"), 8u);
  EXPECT_EQ(*(*f)->get_uint("llama.expert_used_count"), 2u);
  EXPECT_EQ((*f)->find_tensor("blk.1.attn_q.weight"), nullptr);
  const auto* router = (*f)->find_tensor("blk.0.ffn_gate_inp.weight");
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->dtype, tensor::DType::kF32);
  const auto* down = (*f)->find_tensor("blk.0.ffn_down_exps.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->n_dims, 3u);
  EXPECT_EQ(down->dims[0], 1024u);
  EXPECT_EQ(down->dims[1], 512u);
  EXPECT_EQ(down->dims[2], 8u);
}

// Llama-3 rope factors, recomputed here in double precision from the formula in llama.cpp's
// converter: wavelength 2*pi/freq; factor 1 below 8192/4, `factor` above 8192/1, blended between.
std::vector<double> reference_rope_factors(double theta, int dim, double factor) {
  std::vector<double> out;
  for (int i = 0; i < dim; i += 2) {
    const double freq = 1.0 / std::pow(theta, double(i) / dim);
    const double wavelen = 2 * std::numbers::pi / freq;
    if (wavelen < 8192.0 / 4) {
      out.push_back(1);
    } else if (wavelen > 8192.0 / 1) {
      out.push_back(factor);
    } else {
      const double smooth = (8192.0 / wavelen - 1) / (4 - 1);
      out.push_back(1 / ((1 - smooth) / factor + smooth));
    }
  }
  return out;
}

TEST_F(SynthTest, Llama3RopeFactors) {
  auto f = format::GgufFile::open(synth("tiny-llama3", "F16", 1));
  ASSERT_TRUE(f.ok());
  const auto* t = (*f)->find_tensor("rope_freqs.weight");
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->dtype, tensor::DType::kF32);
  const auto got = values(*t);
  const auto want = reference_rope_factors(500000.0, 64, 32.0);
  ASSERT_EQ(got.size(), want.size());
  int blended = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-5 * want[i]) << i;
    blended += want[i] != 1 && want[i] != 32;
  }
  EXPECT_EQ(got.front(), 1.0f);
  EXPECT_EQ(got.back(), 32.0f);
  EXPECT_GT(blended, 0);                                   // the smooth region is exercised
  EXPECT_EQ((*f)->find_tensor("output.weight"), nullptr);  // tied
  // The big shape carries the same factors (same theta and head size).
  const auto* shape = convert::find_model_shape("llama3.2-1b");
  ASSERT_NE(shape, nullptr);
  const auto big =
      convert::llama3_rope_factors(*shape->llama3_rope, shape->rope_theta, shape->head_dim);
  EXPECT_EQ(big, got);
}

TEST_F(SynthTest, EveryTestShapeLoadsAndRuns) {
  for (const char* shape : {"tiny", "tiny-llama3", "tiny-qwen2", "tiny-moe", "tiny-qwen2moe"}) {
    SCOPED_TRACE(shape);
    auto rows = testing::prompt_logits(synth(shape, "F16", 2));
    ASSERT_TRUE(rows.ok()) << rows.status().to_string();
    EXPECT_TRUE(testing::all_finite(*rows));
    // Random weights still give a spread of logits (not all equal).
    double mn = 1e30, mx = -1e30;
    for (float v : rows->back()) {
      mn = std::min<double>(mn, v);
      mx = std::max<double>(mx, v);
    }
    EXPECT_GT(mx - mn, 0.1);
  }
}

TEST(ModelShapes, RealShapesAsPublished) {
  const auto* t = convert::find_model_shape("tinyllama-1.1b");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->num_layers, 22);
  EXPECT_EQ(t->hidden_dim, 2048);
  EXPECT_EQ(t->num_kv_heads, 4);
  EXPECT_EQ(t->ffn_dim, 5632);
  const auto* q = convert::find_model_shape("qwen2.5-0.5b");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->arch, "qwen2");
  EXPECT_TRUE(q->qkv_bias);
  EXPECT_TRUE(q->tied_embeddings);
  EXPECT_EQ(q->num_heads * q->head_dim, 896);
  // Qwen1.5-MoE-A2.7B's config.json: 60 experts of 1408, top 4, shared expert 5632.
  const auto* m = convert::find_model_shape("qwen2moe-a2.7b");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->arch, "qwen2moe");
  EXPECT_EQ(m->num_layers, 24);
  EXPECT_EQ(m->hidden_dim, 2048);
  EXPECT_EQ(m->num_experts, 60);
  EXPECT_EQ(m->num_experts_used, 4);
  EXPECT_EQ(m->ffn_dim, 1408);
  EXPECT_EQ(m->shared_expert_ffn_dim, 5632);
  EXPECT_EQ(convert::find_model_shape("gpt-5"), nullptr);
}

}  // namespace
}  // namespace pagoda
