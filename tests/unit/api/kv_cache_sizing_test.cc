// KV cache sizing helpers: /proc/meminfo parsing (real and malformed text), the byte budget from
// bytes or a fraction, and the dtype names.
#include "api/kv_cache_sizing.h"

#include <gtest/gtest.h>

#include <cmath>

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

}  // namespace
}  // namespace pagoda::api
