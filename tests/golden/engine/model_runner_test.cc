// ModelRunner::warm_up on a real model (the fixture llama-Q8_0.gguf): it writes KV blocks 1.. of
// one dummy sequence only (never the null block 0, never past what it needs), caps itself at the
// cache's capacity, and the engine's outputs do not depend on it (engine_golden_test runs its
// solo reference engine cold and every concurrent engine warm).
#include <gtest/gtest.h>

#include <algorithm>

#include "loader/model_loader.h"
#include "runner/model_runner.h"
#include "test_support.h"

namespace pagoda::runner {
namespace {

std::string model_path() {
  return pagoda::testing::fixture("models/llama-Q8_0.gguf").string();
}

// True when any byte of block `b` (every layer's K and V; an f16 cache) is non-zero.
bool block_written(const KvStorage& kv, int64_t b) {
  for (const kernels::KvLayerView& layer : kv.layers()) {
    const auto bytes = static_cast<size_t>(layer.block_size) *
                       static_cast<size_t>(layer.n_kv_heads) * static_cast<size_t>(layer.head_dim) *
                       2;  // K or V of one block
    for (const void* base : {layer.k, layer.v}) {
      const auto* p = static_cast<const uint8_t*>(base) + static_cast<size_t>(b) * bytes;
      if (std::any_of(p, p + bytes, [](uint8_t x) { return x != 0; })) return true;
    }
  }
  return false;
}

TEST(ModelRunnerWarmUp, WritesOnlyTheBlocksOfItsDummySequence) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto loaded = loader::load_model(model_path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  RunnerConfig rc;
  rc.num_blocks = 8;
  rc.block_size = 16;
  auto runner = ModelRunner::create(*loaded->model, rc);
  ASSERT_TRUE(runner.ok()) << runner.status().to_string();
  const KvStorage& kv = (*runner)->storage();
  for (int64_t b = 0; b < 8; ++b)
    ASSERT_FALSE(block_written(kv, b)) << "a fresh cache is zero, block " << b;

  // 40 tokens: blocks 1, 2 and 3 (the third holds 8 of its 16 rows).
  auto ran = (*runner)->warm_up(40, 4);
  ASSERT_TRUE(ran.ok()) << ran.status().to_string();
  EXPECT_EQ(*ran, 40);
  EXPECT_FALSE(block_written(kv, 0)) << "the null block";
  for (int64_t b = 1; b <= 3; ++b)
    EXPECT_TRUE(block_written(kv, b)) << b;
  for (int64_t b = 4; b < 8; ++b)
    EXPECT_FALSE(block_written(kv, b)) << b;

  // More tokens than the cache holds (7 blocks x 16): capped at the capacity, block 0 still
  // untouched. More logit rows than tokens are capped too.
  ran = (*runner)->warm_up(100000, 1000);
  ASSERT_TRUE(ran.ok()) << ran.status().to_string();
  EXPECT_EQ(*ran, 7 * 16);
  EXPECT_FALSE(block_written(kv, 0));
  for (int64_t b = 1; b < 8; ++b)
    EXPECT_TRUE(block_written(kv, b)) << b;
  ran = (*runner)->warm_up(0, 0);  // nothing to do
  ASSERT_TRUE(ran.ok());
  EXPECT_EQ(*ran, 0);
}

}  // namespace
}  // namespace pagoda::runner
