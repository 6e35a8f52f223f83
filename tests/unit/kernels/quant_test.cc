// quantize_row: hand-worked encodings of simple blocks (sign convention, rounding rule), then
// quantize -> dequantize error bounds on random data per type, re-quantisation of values already
// on the grid, and robustness on zero, constant and non-finite blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/quant.h"
#include "tensor/dtype.h"
#include "tensor/float16.h"

namespace pagoda::kernels {
namespace {

using tensor::DType;

std::vector<uint8_t> quantize(DType t, const std::vector<float>& x) {
  std::vector<uint8_t> q(*tensor::row_size_bytes(t, x.size()));
  quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

std::vector<float> dequantize(DType t, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  dequantize_row(t, q.data(), y.data(), static_cast<int64_t>(n));
  return y;
}

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
  return dequantize(t, quantize(t, x), x.size());
}

double rms_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i)
    s += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
  return std::sqrt(s / static_cast<double>(a.size()));
}

double stddev(const std::vector<float>& a) {
  double mean = 0;
  for (float v : a)
    mean += v;
  mean /= static_cast<double>(a.size());
  double s = 0;
  for (float v : a)
    s += (v - mean) * (v - mean);
  return std::sqrt(s / static_cast<double>(a.size()));
}

uint16_t u16_at(const std::vector<uint8_t>& b, size_t off) {
  return static_cast<uint16_t>(b[off] | (b[off + 1] << 8));
}

// Weight-like data: Gaussian rows with a per-block spread that varies and a few outliers.
std::vector<float> weight_like(size_t n, uint32_t seed, float mean = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::uniform_real_distribution<float> u(0.2f, 2.0f);
  std::vector<float> x(n);
  float spread = 1;
  for (size_t i = 0; i < n; ++i) {
    if (i % 64 == 0) spread = u(rng);
    x[i] = mean + spread * g(rng);
    if (i % 509 == 0) x[i] *= 6;  // outliers
  }
  return x;
}

// ---- encodings worked out by hand ----------------------------------------------------------

TEST(QuantizeTest, Q4_0SignConvention) {
  // Largest magnitude +8 -> d = 8 / -8 = -1 and +8 lands on level 0 (= -8 * d).
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i)
    x[i] = static_cast<float>((i % 16) - 7);  // -7..8
  auto q = quantize(DType::kQ4_0, x);
  EXPECT_EQ(u16_at(q, 0), 0xBC00);  // -1.0
  for (int i = 0; i < 32; ++i) {
    const int nib = i < 16 ? (q[2 + i] & 15) : (q[2 + i - 16] >> 4);
    EXPECT_EQ(nib, 8 - static_cast<int>(x[i])) << i;  // x = d * (q - 8) with d = -1
  }
  EXPECT_EQ(round_trip(DType::kQ4_0, x), x);
}

TEST(QuantizeTest, Q4_1MinAndStep) {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i)
    x[i] = -3.0f + 0.5f * static_cast<float>(i % 16);  // [-3, 4.5]
  auto q = quantize(DType::kQ4_1, x);
  EXPECT_EQ(u16_at(q, 0), 0x3800);  // d = 7.5 / 15 = 0.5
  EXPECT_EQ(u16_at(q, 2), 0xC200);  // m = -3
  EXPECT_EQ(q[4], 0x00);
  EXPECT_EQ(q[5], 0x11);
  EXPECT_EQ(round_trip(DType::kQ4_1, x), x);
}

TEST(QuantizeTest, Q8_0RoundsHalfAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  auto q = quantize(DType::kQ8_0, x);
  EXPECT_EQ(u16_at(q, 0), 0x3C00);
  EXPECT_EQ(static_cast<int8_t>(q[2]), 127);
  EXPECT_EQ(static_cast<int8_t>(q[3]), 3);
  EXPECT_EQ(static_cast<int8_t>(q[4]), -3);
  EXPECT_EQ(static_cast<int8_t>(q[5]), 4);
}

TEST(QuantizeTest, Q5_0HighBits) {
  // Largest magnitude -16 -> d = 1; x = q - 16, so x >= 0 sets the fifth bit.
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i)
    x[i] = static_cast<float>(i - 16);
  auto q = quantize(DType::kQ5_0, x);
  EXPECT_EQ(u16_at(q, 0), 0x3C00);
  EXPECT_EQ(q[2] | q[3] << 8 | q[4] << 16 | static_cast<uint32_t>(q[5]) << 24, 0xFFFF0000u);
  EXPECT_EQ(round_trip(DType::kQ5_0, x), x);
}

TEST(QuantizeTest, PlainTypesRoundToNearestEven) {
  std::vector<float> x = {1.0f, 1.0f + std::ldexp(1.0f, -11), 65504.0f, -0.0f, 1e-8f, 3.14159f};
  auto h = quantize(DType::kF16, x);
  auto b = quantize(DType::kBF16, x);
  auto f = round_trip(DType::kF32, x);
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(u16_at(h, 2 * i), tensor::fp32_to_fp16(x[i])) << i;
    EXPECT_EQ(u16_at(b, 2 * i), tensor::fp32_to_bf16(x[i])) << i;
    EXPECT_EQ(std::memcmp(&f[i], &x[i], 4), 0) << i;
  }
}

// ---- round-trip error on random data --------------------------------------------------------

struct ErrorBound {
  DType dtype;
  double max_rel_rmse;  // RMSE / std of the data, measured here with ~20% headroom
};

class RoundTripTest : public ::testing::TestWithParam<ErrorBound> {};

TEST_P(RoundTripTest, ErrorWithinBound) {
  const auto [t, bound] = GetParam();
  for (float mean : {0.0f, 0.7f}) {
    const auto x = weight_like(256 * 64, 7, mean);
    const auto y = round_trip(t, x);
    const double rel = rms_diff(x, y) / stddev(x);
    RecordProperty(
        std::string(tensor::dtype_name(t)) + (mean == 0 ? "_rel_rmse" : "_rel_rmse_shifted"),
        std::to_string(rel));
    EXPECT_LT(rel, bound) << tensor::dtype_name(t) << " mean " << mean;
    EXPECT_GT(rel, 0.0) << "a lossy type cannot be exact on random data";
  }
}

TEST_P(RoundTripTest, RequantisingGridValuesIsStable) {
  const auto [t, bound] = GetParam();
  const auto x = weight_like(256 * 32, 11);
  const auto y = round_trip(t, x);  // on t's grid
  const auto z = round_trip(t, y);
  // Re-quantising decoded values stays much closer to them than the first pass was to x.
  EXPECT_LE(rms_diff(y, z), 0.25 * rms_diff(x, y)) << tensor::dtype_name(t);
}

TEST_P(RoundTripTest, ZeroConstantAndTinyBlocks) {
  const DType t = GetParam().dtype;
  std::vector<float> zeros(512, 0.0f);
  EXPECT_EQ(round_trip(t, zeros), zeros);
  std::vector<float> constant(512, 0.375f);
  for (float v : round_trip(t, constant))
    EXPECT_NEAR(v, 0.375f, 0.375f * 0.15f);
  std::vector<float> tiny(512, 1e-30f);
  for (float v : round_trip(t, tiny))
    EXPECT_TRUE(std::isfinite(v));
}

TEST_P(RoundTripTest, NonFiniteInputDoesNotCrash) {
  const DType t = GetParam().dtype;
  auto x = weight_like(512, 3);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[300] = std::numeric_limits<float>::infinity();
  x[301] = -std::numeric_limits<float>::infinity();
  x[400] = 3e38f;
  (void)round_trip(t, x);  // any output; UBSan/ASan builds check there is no UB
}

INSTANTIATE_TEST_SUITE_P(
    Types, RoundTripTest,
    ::testing::Values(ErrorBound{DType::kQ8_0, 0.0075}, ErrorBound{DType::kQ5_0, 0.06},
                      ErrorBound{DType::kQ5_1, 0.05}, ErrorBound{DType::kQ4_0, 0.12},
                      ErrorBound{DType::kQ4_1, 0.10}, ErrorBound{DType::kQ6_K, 0.025},
                      ErrorBound{DType::kQ5_K, 0.045}, ErrorBound{DType::kQ4_K, 0.09},
                      ErrorBound{DType::kQ3_K, 0.20}, ErrorBound{DType::kQ2_K, 0.36},
                      ErrorBound{DType::kF16, 0.0003}, ErrorBound{DType::kBF16, 0.0025}),
    [](const auto& param_info) { return std::string(tensor::dtype_name(param_info.param.dtype)); });

TEST(QuantizeTest, MoreBitsMeanLessError) {
  const auto x = weight_like(256 * 64, 5);
  auto err = [&](DType t) { return rms_diff(x, round_trip(t, x)); };
  EXPECT_LT(err(DType::kQ3_K), err(DType::kQ2_K));
  EXPECT_LT(err(DType::kQ4_K), err(DType::kQ3_K));
  EXPECT_LT(err(DType::kQ5_K), err(DType::kQ4_K));
  EXPECT_LT(err(DType::kQ6_K), err(DType::kQ5_K));
  EXPECT_LT(err(DType::kQ8_0), err(DType::kQ6_K));
  EXPECT_LT(err(DType::kQ5_0), err(DType::kQ4_0));
  EXPECT_LT(err(DType::kQ4_K), err(DType::kQ4_0));  // the K-quant search pays off
}

}  // namespace
}  // namespace pagoda::kernels
