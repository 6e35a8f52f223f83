// `pagoda quantize` on synthetic models: every type produces a file that loads and runs, whose
// logits stay close to the F16 model's (the error growing as bits shrink), that keeps the
// metadata and the 1-D tensors, and that handles fallbacks (rows not whole K-blocks), experts and
// requantizing an already quantized file.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "format/gguf_file.h"
#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using tensor::DType;
using testing::run_pagoda;
using testing::scratch_dir;

std::string vocab_path() {
  return testing::fixture("tokenizer/ggml-vocab-llama-spm.gguf").string();
}

std::string synth_base(const std::string& shape) {
  const fs::path out = scratch_dir() / ("q-base-" + shape + ".gguf");
  if (!fs::exists(out)) {
    const auto r = run_pagoda({"synth", "--shape", shape, "--vocab", vocab_path(), "--type", "F16",
                               "--seed", "11", "-o", out.string()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  return out.string();
}

std::string quantize(const std::string& in, const std::string& type) {
  const fs::path out = fs::path(in).replace_extension("").string() + "-" + type + ".gguf";
  if (!fs::exists(out)) {
    const auto r = run_pagoda({"quantize", in, out.string(), type});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(out.string()), std::string::npos) << r.out;
  }
  return out.string();
}

const std::vector<std::vector<float>>& reference_logits(const std::string& shape) {
  static std::map<std::string, std::vector<std::vector<float>>> cache;
  auto it = cache.find(shape);
  if (it == cache.end()) {
    auto rows = testing::prompt_logits(synth_base(shape));
    EXPECT_TRUE(rows.ok()) << rows.status().to_string();
    it = cache.emplace(shape, rows.ok() ? std::move(*rows) : decltype(cache)::mapped_type{}).first;
  }
  return it->second;
}

// Relative logit error of `type` against the F16 model (cached; NaN if anything failed).
double error_for(const std::string& shape, const std::string& type) {
  static std::map<std::string, double> cache;
  const std::string key = shape + "/" + type;
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  double err = NAN;
  auto rows = testing::prompt_logits(quantize(synth_base(shape), type));
  EXPECT_TRUE(rows.ok()) << type << ": " << rows.status().to_string();
  if (rows.ok()) {
    EXPECT_TRUE(testing::all_finite(*rows)) << type;
    err = testing::relative_logit_error(reference_logits(shape), *rows);
  }
  cache[key] = err;
  return err;
}

class QuantizeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PAGODA_REQUIRE_FIXTURE(vocab_path());
    ASSERT_TRUE(fs::exists(testing::pagoda_binary())) << testing::pagoda_binary();
  }
};

struct TypeBound {
  const char* type;
  double max_error;  // relative logit error vs F16: about 1.5x what was measured (seed 11)
};

class QuantizeTypeTest : public QuantizeTest, public ::testing::WithParamInterface<TypeBound> {};

TEST_P(QuantizeTypeTest, LogitsCloseToF16) {
  const TypeBound b = GetParam();
  const double err = error_for("tiny", b.type);
  EXPECT_LT(err, b.max_error) << b.type;
  std::printf("[ measured ] %-7s relative logit error %.4f\n", b.type, err);
}

// The types the issue asks for plus the cheap extremes; the other mixes (Q3_K_S/L, Q4_K_S,
// Q5_K_S) use the same encoders and are covered by quant_mix_test.
INSTANTIATE_TEST_SUITE_P(AllTypes, QuantizeTypeTest,
                         ::testing::Values(TypeBound{"Q8_0", 0.04}, TypeBound{"Q6_K", 0.08},
                                           TypeBound{"Q5_1", 0.15}, TypeBound{"Q5_0", 0.16},
                                           TypeBound{"Q5_K_M", 0.15}, TypeBound{"Q4_1", 0.3},
                                           TypeBound{"Q4_0", 0.3}, TypeBound{"Q4_K_M", 0.26},
                                           TypeBound{"Q3_K_M", 0.38}, TypeBound{"Q2_K", 0.75}),
                         [](const auto& p) { return std::string(p.param.type); });

TEST_F(QuantizeTest, ErrorGrowsAsBitsShrink) {
  const std::vector<std::string> by_bits = {"Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q3_K_M", "Q2_K"};
  for (size_t i = 1; i < by_bits.size(); ++i) {
    EXPECT_LT(error_for("tiny", by_bits[i - 1]), error_for("tiny", by_bits[i]))
        << by_bits[i - 1] << " vs " << by_bits[i];
  }
  EXPECT_LT(error_for("tiny", "Q8_0"), error_for("tiny", "Q5_0"));
  EXPECT_LT(error_for("tiny", "Q5_0"), error_for("tiny", "Q4_0"));
  EXPECT_LT(error_for("tiny", "Q5_1"), error_for("tiny", "Q4_1"));
}

TEST_F(QuantizeTest, KeepsMetadataAndOneDimensionalTensors) {
  const std::string base = synth_base("tiny");
  auto in = format::GgufFile::open(base);
  auto out = format::GgufFile::open(quantize(base, "Q4_K_M"));
  ASSERT_TRUE(in.ok() && out.ok());
  EXPECT_EQ(*(*out)->get_uint("general.file_type"), 15u);
  EXPECT_EQ(*(*out)->get_uint("general.quantization_version"), 2u);
  ASSERT_EQ((*in)->metadata().size(), (*out)->metadata().size());
  for (size_t i = 0; i < (*in)->metadata().size(); ++i) {
    const auto& a = (*in)->metadata()[i];
    const auto& b = (*out)->metadata()[i];
    EXPECT_EQ(a.key, b.key);  // same order
    if (a.key == "general.file_type") continue;
    EXPECT_EQ(a.value.type, b.value.type) << a.key;
    EXPECT_EQ(a.value.str, b.value.str) << a.key;
    EXPECT_TRUE(
        std::equal(a.value.raw.begin(), a.value.raw.end(), b.value.raw.begin(), b.value.raw.end()))
        << a.key;
  }
  ASSERT_EQ((*in)->tensors().size(), (*out)->tensors().size());
  for (size_t i = 0; i < (*in)->tensors().size(); ++i) {
    const auto& a = (*in)->tensors()[i];
    const auto& b = (*out)->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.n_dims, b.n_dims);
    EXPECT_TRUE(std::equal(a.dims, a.dims + 4, b.dims)) << a.name;
    EXPECT_EQ(b.offset % (*out)->alignment(), 0u);
    if (a.n_dims == 1) {
      EXPECT_EQ(b.dtype, DType::kF32) << b.name;
      ASSERT_EQ(a.size_bytes, b.size_bytes);
      EXPECT_EQ(std::memcmp(a.data, b.data, a.size_bytes), 0) << a.name;
    } else {
      EXPECT_TRUE(tensor::dtype_info(b.dtype).is_quantized) << b.name;
    }
  }
  // tiny has 2 layers: use_more_bits picks layer 1 only.
  EXPECT_EQ((*out)->find_tensor("blk.0.attn_v.weight")->dtype, DType::kQ4_K);
  EXPECT_EQ((*out)->find_tensor("blk.1.attn_v.weight")->dtype, DType::kQ6_K);
  EXPECT_EQ((*out)->find_tensor("blk.1.ffn_down.weight")->dtype, DType::kQ6_K);
  EXPECT_EQ((*out)->find_tensor("output.weight")->dtype, DType::kQ6_K);
}

TEST_F(QuantizeTest, FallbackTypesForRowsThatAreNotWholeKBlocks) {
  // tiny-qwen2: hidden 384 (1.5 x 256), ffn 1024; tied embeddings; q/k/v biases.
  auto out = format::GgufFile::open(quantize(synth_base("tiny-qwen2"), "Q4_K_M"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)->find_tensor("token_embd.weight")->dtype, DType::kQ8_0);      // Q6_K -> Q8_0
  EXPECT_EQ((*out)->find_tensor("blk.0.attn_q.weight")->dtype, DType::kQ5_0);    // Q4_K -> Q5_0
  EXPECT_EQ((*out)->find_tensor("blk.1.attn_v.weight")->dtype, DType::kQ8_0);    // Q6_K -> Q8_0
  EXPECT_EQ((*out)->find_tensor("blk.0.ffn_down.weight")->dtype, DType::kQ4_K);  // rows of 1024
  EXPECT_EQ((*out)->find_tensor("blk.0.attn_q.bias")->dtype, DType::kF32);
  const double err = error_for("tiny-qwen2", "Q4_K_M");
  EXPECT_LT(err, 0.16);  // measured 0.107
  std::printf("[ measured ] tiny-qwen2 Q4_K_M relative logit error %.4f\n", err);
}

TEST_F(QuantizeTest, EightExperts) {
  auto out = format::GgufFile::open(quantize(synth_base("tiny-moe"), "Q4_K_M"));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)->find_tensor("blk.0.attn_v.weight")->dtype, DType::kQ8_0);
  EXPECT_EQ((*out)->find_tensor("blk.0.attn_k.weight")->dtype, DType::kQ8_0);
  EXPECT_EQ((*out)->find_tensor("blk.0.attn_output.weight")->dtype, DType::kQ5_K);
  EXPECT_EQ((*out)->find_tensor("blk.0.ffn_gate_inp.weight")->dtype, DType::kF32);
  EXPECT_EQ((*out)->find_tensor("blk.0.ffn_up_exps.weight")->dtype, DType::kQ4_K);
  EXPECT_EQ((*out)->find_tensor("blk.1.ffn_down_exps.weight")->dtype, DType::kQ6_K);
  const double err = error_for("tiny-moe", "Q4_K_M");
  EXPECT_LT(err, 0.17);  // measured 0.114
  std::printf("[ measured ] tiny-moe Q4_K_M relative logit error %.4f\n", err);
}

TEST_F(QuantizeTest, RequantizesAQuantizedFile) {
  // Q8_0 -> Q4_0 goes through f32 and lands close to F16 -> Q4_0.
  const std::string q8 = quantize(synth_base("tiny"), "Q8_0");
  const std::string q8_q4 = quantize(q8, "Q4_0");
  auto rows = testing::prompt_logits(q8_q4);
  ASSERT_TRUE(rows.ok()) << rows.status().to_string();
  const double err = testing::relative_logit_error(reference_logits("tiny"), *rows);
  EXPECT_LT(err, 1.5 * error_for("tiny", "Q4_0"));
  auto f = format::GgufFile::open(q8_q4);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->find_tensor("blk.0.attn_q.weight")->dtype, DType::kQ4_0);
  EXPECT_EQ(*(*f)->get_uint("general.file_type"), 2u);
}

TEST_F(QuantizeTest, OutputPassesAnIndependentGgufCheck) {
  // gguf_check.py parses the files with its own reader and ggml's block table: layout, padding,
  // file length and finite block scales.
  if (std::system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 with numpy is needed for gguf_check.py";
  }
  std::string cmd = "/usr/bin/python3 '" +
                    (testing::source_dir() / "tests/golden/tools/gguf_check.py").string() + "'";
  const std::string base = synth_base("tiny");
  cmd += " '" + base + "'";
  for (const char* type :
       {"Q8_0", "Q6_K", "Q5_1", "Q5_0", "Q5_K_M", "Q4_1", "Q4_0", "Q4_K_M", "Q3_K_M", "Q2_K"}) {
    cmd += " '" + quantize(base, type) + "'";
  }
  cmd += " '" + quantize(synth_base("tiny-qwen2"), "Q4_K_M") + "'";
  cmd += " '" + quantize(synth_base("tiny-moe"), "Q4_K_M") + "'";
  const fs::path log = scratch_dir() / "gguf_check.log";
  const int status = std::system((cmd + " >'" + log.string() + "' 2>&1").c_str());
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(status, 0) << output;
}

}  // namespace
}  // namespace pagoda
