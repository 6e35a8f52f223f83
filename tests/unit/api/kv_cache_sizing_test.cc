// KV cache sizing helpers: /proc/meminfo parsing (real and malformed text), the byte budget from
// bytes or a fraction, the dtype names, and the block bytes / block counts per dtype that
// Engine::create sizes the cache with (hand-computed; q8_0 = 34 bytes per 32 values), and the
// max_model_len in effect.
#include "api/kv_cache_sizing.h"

#include <gtest/gtest.h>

#include <cmath>

#include "backend/kv_storage.h"
#include "runner/model_runner.h"

namespace pagoda::api {
namespace {

// max_model_len as rank 0's engine and every worker resolve it (a LongRoPE model's table
// depends on it): 0 is the model's context; above it clamped or refused; at least 2.
TEST(KvCacheSizing, ResolvesMaxModelLen) {
  EXPECT_EQ(*resolve_max_model_len(0, false, 4096), 4096);
  EXPECT_EQ(*resolve_max_model_len(64, false, 4096), 64);
  EXPECT_EQ(*resolve_max_model_len(8192, true, 4096), 4096);
  const auto refused = resolve_max_model_len(8192, false, 4096);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "max_model_len (8192) exceeds the model's context length (4096)");
  EXPECT_FALSE(resolve_max_model_len(1, false, 4096).ok());
  EXPECT_FALSE(resolve_max_model_len(-1, true, 4096).ok());
  EXPECT_FALSE(resolve_max_model_len(0, false, 1).ok());
}

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

// deepseek2's MLA cache (the fixture's dims: 3 layers, 4 heads of key 48 / value 32, rope key 16,
// kv_lora_rank 64): one 80-value row per token and layer, no V array, and the views' v is k.
model::ModelConfig mla_config() {
  model::ModelConfig c;
  c.num_layers = 3;
  c.num_heads = 4;
  c.num_kv_heads = 4;
  c.head_dim = 48;
  c.v_head_dim = 32;
  c.rope_dims = 16;
  c.kv_lora_rank = 64;
  return c;
}

TEST(KvCacheSizing, MlaCachesTheLatentRow) {
  const model::ModelConfig c = mla_config();
  const backend::KvLayout layout = model::kv_layout(c);
  EXPECT_EQ(layout.num_kv_heads, 1);
  EXPECT_EQ(layout.head_dim, 80);
  EXPECT_TRUE(layout.values_in_keys);
  // 3 layers x 16 tokens x 80 values x 2 bytes: 160 bytes per token, against the equivalent MHA
  // cache's 3 x 4 x (48 + 32) x 2 = 1920.
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(layout, 16, tensor::DType::kF16),
            3u * 16 * 80 * 2);
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(layout, 16, tensor::DType::kF32),
            3u * 16 * 80 * 4);
  EXPECT_EQ(model::mha_kv_bytes_per_token(c, tensor::DType::kF16), 1920.0);
  const uint64_t budget = 3u * 16 * 80 * 2 * 500;
  EXPECT_EQ(*runner::ModelRunner::blocks_for_memory(c, budget, 16, tensor::DType::kF16), 500);

  auto kv = backend::KvStorage::create(backend::cpu_backend(), layout, 4, 2, tensor::DType::kF32);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  EXPECT_EQ(kv->total_bytes(), 4u * 3 * 2 * 80 * 4);
  ASSERT_EQ(kv->layers().size(), 3u);
  const uint64_t block_bytes = 2 * 80 * 4;
  for (size_t l = 0; l < 3; ++l) {
    EXPECT_EQ(kv->layers()[l].v, kv->layers()[l].k);
    if (l > 0) {
      EXPECT_EQ(
          static_cast<uint8_t*>(kv->layers()[l].k) - static_cast<uint8_t*>(kv->layers()[l - 1].k),
          static_cast<ptrdiff_t>(4 * block_bytes));  // the arrays are packed, no V between
    }
  }
  auto* k2 = static_cast<uint8_t*>(kv->layers()[2].k);
  for (uint64_t i = 0; i < block_bytes; ++i)
    k2[block_bytes * 3 + i] = static_cast<uint8_t>(i * 5 + 3);
  kv->copy_block(3, 1);
  for (uint64_t i = 0; i < block_bytes; ++i)
    ASSERT_EQ(k2[block_bytes + i], static_cast<uint8_t>(i * 5 + 3)) << i;
}

TEST(KvCacheSizing, MlaQ8_0NeedsRowsOf32) {
  // The fixture's 80-value rows cannot be Q8_0 blocks: refused naming the dtype and the MLA row.
  auto r = runner::ModelRunner::blocks_for_memory(mla_config(), 1 << 30, 16, tensor::DType::kQ8_0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("kv_cache_dtype q8_0"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("MLA latent"), std::string::npos) << r.status().message();
  // DeepSeek-V2's rows (rope key 64 + kv_lora_rank 512 = 576) are 18 blocks of 34 bytes.
  model::ModelConfig v2 = mla_config();
  v2.rope_dims = 64;
  v2.kv_lora_rank = 512;
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(model::kv_layout(v2), 16, tensor::DType::kQ8_0),
            3u * 16 * 18 * 34);
}

// A hybrid model (Gemma 2: local layers 0, 2, 4, global 1, 3; one stage of a pipeline too):
// with KV groups the layers of the two groups share arrays, index within the group, so a block
// costs max(local, global) layers' bytes; copy_block copies every array once.
TEST(KvCacheSizing, HybridGroupsShareArrays) {
  model::ModelConfig c = config_with_head_dim(32);
  c.num_layers = 5;
  c.sliding_window = 8;
  c.sliding_layers = model::SlidingLayers::kEven;
  EXPECT_EQ(c.hybrid_sliding_window(), 8);
  EXPECT_EQ(c.uniform_sliding_window(), 0);
  const backend::KvLayout plain = model::kv_layout(c), grouped = model::kv_layout(c, true);
  EXPECT_TRUE(plain.layer_array.empty());
  EXPECT_EQ(grouped.layer_array, (std::vector<int32_t>{0, 0, 1, 1, 2}));
  EXPECT_EQ(grouped.num_arrays(), 3);
  const uint64_t f16 = *backend::KvStorage::bytes_per_block(plain, 16, tensor::DType::kF16);
  EXPECT_EQ(*backend::KvStorage::bytes_per_block(grouped, 16, tensor::DType::kF16), f16 / 5 * 3);
  EXPECT_EQ(*runner::ModelRunner::blocks_for_memory(c, f16 * 30, 16, tensor::DType::kF16, true),
            50);

  auto kv = backend::KvStorage::create(backend::cpu_backend(), grouped, 4, 16, tensor::DType::kF16);
  ASSERT_TRUE(kv.ok()) << kv.status().to_string();
  const auto layers = kv->layers();
  EXPECT_EQ(layers[0].k, layers[1].k);  // local 0 and global 1: array 0
  EXPECT_EQ(layers[2].v, layers[3].v);
  EXPECT_NE(layers[0].k, layers[2].k);
  EXPECT_NE(layers[0].k, layers[0].v);
  EXPECT_EQ(kv->total_bytes(), 4 * f16 / 5 * 3);
  // Every array's block 1 copied into block 2, nothing else touched.
  const uint64_t block = f16 / 5 / 2;  // one layer's K (or V) of one block
  auto* base = static_cast<uint8_t*>(layers[0].k);
  for (uint64_t i = 0; i < kv->total_bytes(); ++i)
    base[i] = static_cast<uint8_t>(i * 7 + 1);
  std::vector<uint8_t> before(base, base + kv->total_bytes());
  kv->copy_block(1, 2);
  for (uint64_t a = 0; a < 6; ++a) {  // 3 K arrays and 3 V arrays of 4 blocks
    for (uint64_t b = 0; b < 4; ++b) {
      for (uint64_t j = 0; j < block; ++j) {
        const uint64_t at = (a * 4 + b) * block + j;
        const uint64_t from = b == 2 ? (a * 4 + 1) * block + j : at;
        ASSERT_EQ(base[at], before[from]) << "array " << a << " block " << b;
      }
    }
  }

  // A pipeline stage holding layers 2..4 of the five: its own layers map to its own arrays.
  model::ModelConfig stage = c;
  stage.num_layers = 3;
  stage.first_layer = 2;
  stage.total_layers = 5;
  EXPECT_EQ(stage.hybrid_sliding_window(), 8);
  EXPECT_EQ(model::kv_layout(stage, true).layer_array, (std::vector<int32_t>{0, 0, 1}));
  // Every layer local: not hybrid, no groups (the uniform window releases for all of them).
  c.sliding_layers = model::SlidingLayers::kAll;
  EXPECT_EQ(c.hybrid_sliding_window(), 0);
  EXPECT_TRUE(model::kv_layout(c, true).layer_array.empty());
}

}  // namespace
}  // namespace pagoda::api
