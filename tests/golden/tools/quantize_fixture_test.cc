// `pagoda quantize` against llama.cpp: quantizing the F16 fixture gives the same tensor type for
// every tensor as llama-quantize chose in the Q8_0 / Q4_0 / Q4_K_M fixtures (this checks the mix
// rules on a real file), the same metadata, and mostly byte-identical blocks (llama.cpp
// quantized from the f32 originals, we from their F16 rounding, so some blocks differ).
#include <gtest/gtest.h>

#include <cstring>

#include "format/gguf_file.h"
#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

struct FixtureCase {
  const char* type;
  // Fraction of quantized blocks equal to llama.cpp's; measured 55% (Q8_0: its f16 scale
  // amax/127 moves with the input's rounding), 93% (Q4_0: scale max/-8 is exact, only values at a
  // rounding edge differ), 54% (Q4_K_M).
  double min_identical_blocks;
};

class QuantizeFixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(QuantizeFixtureTest, MatchesLlamaCpp) {
  const FixtureCase c = GetParam();
  const fs::path f16 = testing::fixture("models/llama-F16.gguf");
  const fs::path theirs_path = testing::fixture(std::string("models/llama-") + c.type + ".gguf");
  PAGODA_REQUIRE_FIXTURE(f16);
  PAGODA_REQUIRE_FIXTURE(theirs_path);
  ASSERT_TRUE(fs::exists(testing::pagoda_binary()));
  const fs::path out = testing::scratch_dir() / (std::string("fixture-") + c.type + ".gguf");
  const auto r = testing::run_pagoda({"quantize", f16.string(), out.string(), c.type});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  auto ours = format::GgufFile::open(out.string());
  auto theirs = format::GgufFile::open(theirs_path.string());
  ASSERT_TRUE(ours.ok()) << ours.status().to_string();
  ASSERT_TRUE(theirs.ok());

  // Metadata: every key llama.cpp wrote, with the same value (file_type included).
  for (const auto& kv : (*theirs)->metadata()) {
    const auto* mine = (*ours)->find(kv.key);
    ASSERT_NE(mine, nullptr) << kv.key;
    EXPECT_EQ(mine->type, kv.value.type) << kv.key;
    EXPECT_EQ(mine->str, kv.value.str) << kv.key;
    EXPECT_TRUE(
        std::equal(mine->raw.begin(), mine->raw.end(), kv.value.raw.begin(), kv.value.raw.end()))
        << kv.key;
  }
  EXPECT_EQ((*ours)->metadata().size(), (*theirs)->metadata().size());

  ASSERT_EQ((*ours)->tensors().size(), (*theirs)->tensors().size());
  uint64_t blocks = 0, identical = 0;
  for (const auto& t : (*theirs)->tensors()) {
    const auto* mine = (*ours)->find_tensor(t.name);
    ASSERT_NE(mine, nullptr) << t.name;
    EXPECT_EQ(tensor::dtype_name(mine->dtype), tensor::dtype_name(t.dtype)) << t.name;
    ASSERT_EQ(mine->size_bytes, t.size_bytes) << t.name;
    const auto info = tensor::dtype_info(t.dtype);
    if (!info.is_quantized) {
      EXPECT_EQ(std::memcmp(mine->data, t.data, t.size_bytes), 0) << t.name;
      continue;
    }
    uint64_t tensor_identical = 0;
    const uint64_t n = t.size_bytes / info.type_size;
    for (uint64_t b = 0; b < n; ++b) {
      tensor_identical += std::memcmp(mine->data + b * info.type_size, t.data + b * info.type_size,
                                      info.type_size) == 0;
    }
    blocks += n;
    identical += tensor_identical;
  }
  const double fraction = static_cast<double>(identical) / static_cast<double>(blocks);
  std::printf("[ measured ] %s: %.1f%% of %llu blocks byte-identical to llama.cpp's\n", c.type,
              100 * fraction, static_cast<unsigned long long>(blocks));
  EXPECT_GE(fraction, c.min_identical_blocks);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QuantizeFixtureTest,
                         ::testing::Values(FixtureCase{"Q8_0", 0.35}, FixtureCase{"Q4_0", 0.75},
                                           FixtureCase{"Q4_K_M", 0.35}),
                         [](const auto& p) { return std::string(p.param.type); });

}  // namespace
}  // namespace pagoda
