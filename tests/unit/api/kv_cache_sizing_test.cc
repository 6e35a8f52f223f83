// KV cache sizing helpers: /proc/meminfo parsing (real and malformed text), the byte budget from
// bytes or a fraction, the dtype names, and the block bytes / block counts per dtype that
// Engine::create sizes the cache with (hand-computed; q8_0 = 34 bytes per 32 values).
#include "api/kv_cache_sizing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend/kv_storage.h"
#include "runner/model_runner.h"

namespace pagoda::api {
namespace {

TEST(KvCacheSizing, ParsesMemAvailable) {
  const std::string meminfo =
      "MemTotal:       32653200 kB\n"
      "MemFree:         1234567 kB\n"
      "MemAvailable:   21892340 kB\n"
      "Buffers:          123456 kB\n";
  auto v = parse_mem_available(meminfo);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(*v, 21892340ull * 1024);
  EXPECT_TRUE(read_mem_available().ok());  // this machine's /proc/meminfo
}

TEST(KvCacheSizing, RejectsMalformedMeminfo) {
  EXPECT_FALSE(parse_mem_available("MemTotal: 5 kB\n").ok());
  EXPECT_FALSE(parse_mem_available("MemAvailable:  kB\n").ok());
  EXPECT_FALSE(parse_mem_available("MemAvailable: 12 MB\n").ok());
  EXPECT_FALSE(parse_mem_available("MemAvailable: 99999999999999999999999 kB\n").ok());
  EXPECT_FALSE(parse_mem_available("MemAvailable: 18446744073709551615 kB\n").ok());
  EXPECT_FALSE(parse_mem_available("").ok());
}

TEST(KvCacheSizing, BudgetFromBytesOrFraction) {
  EXPECT_EQ(*kv_cache_budget(12345, 0.5, 1000), 12345u);  // explicit bytes win
  EXPECT_EQ(*kv_cache_budget(0, 0.25, 4000), 1000u);
  EXPECT_EQ(*kv_cache_budget(0, 1.0, 4000), 4000u);
  for (const double bad : {0.0, -0.1, 1.5, std::nan("")}) {
    auto r = kv_cache_budget(0, bad, 4000);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("kv_cache_fraction"), std::string::npos);
  }
}

TEST(KvCacheSizing, DtypeNames) {
  EXPECT_EQ(*parse_kv_cache_dtype("f16"), tensor::DType::kF16);
  EXPECT_EQ(*parse_kv_cache_dtype("BF16"), tensor::DType::kBF16);
  EXPECT_EQ(*parse_kv_cache_dtype("q8_0"), tensor::DType::kQ8_0);
  EXPECT_EQ(*parse_kv_cache_dtype("f32"), tensor::DType::kF32);
  auto bad = parse_kv_cache_dtype("q4_0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kv_cache_dtype"), std::string::npos);
}

model::ModelConfig config_with_head_dim(int32_t head_dim) {
  model::ModelConfig c;
  c.num_layers = 2;
  c.num_heads = 8;
  c.num_kv_heads = 4;
  c.head_dim = head_dim;
  return c;
}

TEST(KvCacheSizing, BlockBytesFollowTheDtype) {
  const model::ModelConfig c = config_with_head_dim(64);
  // 2 layers x (K, V) x 4 KV heads x 16 tokens x row bytes.
  const uint64_t rows = 2 * 2 * 4 * 16;
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(model::kv_layout(c), 16, tensor::DType::kF32),
            rows * 256);
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(model::kv_layout(c), 16, tensor::DType::kF16),
            rows * 128);
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(model::kv_layout(c), 16, tensor::DType::kBF16),
            rows * 128);
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(model::kv_layout(c), 16, tensor::DType::kQ8_0),
            rows * 68);
  // The same budget holds 128/68 times as many q8_0 blocks as f16 ones.
  const uint64_t budget = rows * 128 * 1000;
  EXPECT_EQ(*runner::ModelRunner::blocks_for_memory(c, budget, 16, tensor::DType::kF16), 1000);
  EXPECT_EQ(*runner::ModelRunner::blocks_for_memory(c, budget, 16, tensor::DType::kQ8_0),
            1000 * 128 / 68);
}

TEST(KvCacheSizing, Q8_0RejectsHeadDimNotMultipleOf32) {
  // The call Engine::create makes to size the cache fails with a message naming head_dim.
  const model::ModelConfig c = config_with_head_dim(80);
  auto r = runner::ModelRunner::blocks_for_memory(c, 1 << 30, 16, tensor::DType::kQ8_0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("head_dim"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("q8_0"), std::string::npos) << r.status().message();
  EXPECT_TRUE(runner::ModelRunner::blocks_for_memory(c, 1 << 30, 16, tensor::DType::kBF16).ok());
  EXPECT_FALSE(backend::KvStorage::create(backend::cpu_backend(), model::kv_layout(c), 4, 16,
                                          tensor::DType::kQ8_0)
                   .ok());
}

TEST(KvCacheSizing, Q8_0StorageCopiesWholeBlocks) {
  const model::ModelConfig c = config_with_head_dim(32);
  auto kv = backend::KvStorage::create(backend::cpu_backend(), model::kv_layout(c), 3, 2,
                                       tensor::DType::kQ8_0);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ(kv->total_bytes(), 3u * 2 * 2 * 4 * 2 * 34);
  ASSERT_EQ(kv->layers().size(), 2u);
  const uint64_t block_bytes = 4 * 2 * 34;  // one layer's K for one block
  auto* k1 = static_cast<uint8_t*>(kv->layers()[1].k);
  for (uint64_t i = 0; i < block_bytes; ++i)
    k1[block_bytes * 2 + i] = static_cast<uint8_t>(i * 7 + 1);
  kv->copy_block(2, 0);
  for (uint64_t i = 0; i < block_bytes; ++i)
    ASSERT_EQ(k1[i], static_cast<uint8_t>(i * 7 + 1)) << i;
  EXPECT_EQ(k1[block_bytes], 0) << "block 1 untouched";
}

}  // namespace
}  // namespace pagoda::api
