// dequantize_row on hand-built blocks: literal bytes with values worked out by hand, and blocks
// encoded field by field by block_builder.h (from the format definition) with every level,
// scale and min exercised, checked against values computed from that definition.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "block_builder.h"
#include "kernels/quant.h"
#include "tensor/float16.h"

namespace pagoda::kernels {
namespace {

using tensor::DType;
using testing::BuiltBlock;

constexpr uint16_t kOne = 0x3C00;       // 1.0
constexpr uint16_t kHalf = 0x3800;      // 0.5
constexpr uint16_t kQuarter = 0x3400;   // 0.25
constexpr uint16_t kMinusTwo = 0xC000;  // -2.0

std::vector<float> dequant(DType t, const std::vector<uint8_t>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), NAN);
  dequantize_row(t, bytes.data(), out.data(), n);
  return out;
}

// Concatenates blocks into one row, dequantises it, checks every element. `exact`: the
// expected values are exactly representable and the kernel's float arithmetic is exact.
void check_row(DType t, const std::vector<BuiltBlock>& blocks, bool exact) {
  std::vector<uint8_t> bytes;
  std::vector<double> expected;
  for (const auto& b : blocks) {
    bytes.insert(bytes.end(), b.bytes.begin(), b.bytes.end());
    expected.insert(expected.end(), b.expected.begin(), b.expected.end());
  }
  // Misalign the row on purpose: blocks may sit at any address.
  std::vector<uint8_t> shifted(bytes.size() + 1);
  std::copy(bytes.begin(), bytes.end(), shifted.begin() + 1);
  std::vector<float> got(expected.size(), NAN);
  dequantize_row(t, shifted.data() + 1, got.data(), static_cast<int64_t>(got.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    if (exact) {
      ASSERT_EQ(got[i], static_cast<float>(expected[i]))
          << tensor::dtype_name(t) << " element " << i;
    } else {
      ASSERT_NEAR(got[i], expected[i], 1e-6 * (std::fabs(expected[i]) + 1) * 8)
          << tensor::dtype_name(t) << " element " << i;
    }
  }
}

template <size_t N>
std::array<int, N> random_levels(std::mt19937& rng, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::array<int, N> a{};
  for (auto& v : a)
    v = dist(rng);
  return a;
}

// Every level appears: a ramp over [lo, hi] repeated, then shuffled.
template <size_t N>
std::array<int, N> all_levels(std::mt19937& rng, int lo, int hi) {
  std::array<int, N> a{};
  for (size_t i = 0; i < N; ++i)
    a[i] = lo + static_cast<int>(i % static_cast<size_t>(hi - lo + 1));
  std::shuffle(a.begin(), a.end(), rng);
  return a;
}

uint16_t random_half(std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  return tensor::fp32_to_fp16(dist(rng));
}

// ---- literal blocks, worked out by hand ---------------------------------------------------------

TEST(DequantTest, Q4_0Literal) {
  std::vector<uint8_t> b(18, 0x88);  // every nibble 8 -> 0
  b[0] = 0x00;
  b[1] = 0x3C;   // d = 1.0
  b[2] = 0x1F;   // element 0: 15 - 8 = 7, element 16: 1 - 8 = -7
  b[17] = 0x08;  // element 15: 0, element 31: 0 - 8 = -8
  auto y = dequant(DType::kQ4_0, b, 32);
  EXPECT_EQ(y[0], 7.0f);
  EXPECT_EQ(y[16], -7.0f);
  EXPECT_EQ(y[15], 0.0f);
  EXPECT_EQ(y[31], -8.0f);
  EXPECT_EQ(y[5], 0.0f);
}

TEST(DequantTest, Q4_1Literal) {
  std::vector<uint8_t> b(20, 0);
  b[1] = 0x38;  // d = 0.5
  b[3] = 0xC0;  // m = -2.0
  b[4] = 0xF3;  // element 0: 3 * 0.5 - 2 = -0.5, element 16: 15 * 0.5 - 2 = 5.5
  auto y = dequant(DType::kQ4_1, b, 32);
  EXPECT_EQ(y[0], -0.5f);
  EXPECT_EQ(y[16], 5.5f);
  EXPECT_EQ(y[1], -2.0f);
}

TEST(DequantTest, Q5_0Literal) {
  std::vector<uint8_t> b(22, 0);
  b[1] = 0x3C;      // d = 1
  b[2 + 2] = 0x10;  // qh bit 20 -> element 20's fifth bit
  b[6 + 4] = 0x30;  // qs[4]: element 4 low nibble 0, element 20 high nibble 3
  auto y = dequant(DType::kQ5_0, b, 32);
  EXPECT_EQ(y[4], -16.0f);
  EXPECT_EQ(y[20], 3.0f);  // (3 | 16) - 16
}

TEST(DequantTest, Q5_1Literal) {
  std::vector<uint8_t> b(24, 0);
  b[1] = 0x3C;      // d = 1
  b[3] = 0x3C;      // m = 1
  b[4 + 0] = 0x02;  // qh bit 1 -> element 1
  b[8 + 1] = 0x0F;  // element 1 low nibble 15
  auto y = dequant(DType::kQ5_1, b, 32);
  EXPECT_EQ(y[1], 32.0f);  // 31 * 1 + 1
  EXPECT_EQ(y[17], 1.0f);
}

TEST(DequantTest, Q8_0Literal) {
  std::vector<uint8_t> b(34, 0);
  b[1] = 0x38;   // d = 0.5
  b[2] = 0x81;   // -127
  b[33] = 0x7F;  // 127
  auto y = dequant(DType::kQ8_0, b, 32);
  EXPECT_EQ(y[0], -63.5f);
  EXPECT_EQ(y[31], 63.5f);
}

TEST(DequantTest, Q2_KLiteral) {
  std::vector<uint8_t> b(84, 0);
  b[4] = 0x25;        // sub-block 4 (elements 64..79): scale 5, min 2
  b[16 + 13] = 0x30;  // element 77: half 0, plane (77 / 32) = 2 -> shift 4 of qs[77 % 32 = 13]
  b[81] = 0x3C;       // d = 1
  b[83] = 0x38;       // dmin = 0.5
  auto y = dequant(DType::kQ2_K, b, 256);
  EXPECT_EQ(y[77], 14.0f);  // 1 * 5 * 3 - 0.5 * 2
  EXPECT_EQ(y[76], -1.0f);  // level 0
}

TEST(DequantTest, Q3_KLiteral) {
  std::vector<uint8_t> b(110, 0);
  // Sub-block 9 (elements 144..159): low nibble = high nibble of scales[1], high bits = bits 4-5
  // of scales[9]: 7 | (2 << 4) = 39 -> signed 7.
  b[96 + 1] = 0x70;
  b[96 + 9] = 0x20;
  // Element 150: half 1, r = 22 -> qs[32 + 22], shift 0; hmask[150 % 32 = 22] bit 150 / 32 = 4.
  b[32 + 32 + 22] = 0x02;
  b[22] = 0x10;
  // Element 151: same sub-block, low bits 2, high bit clear -> 2 - 4 = -2.
  b[32 + 32 + 23] = 0x02;
  b[109] = 0x3C;  // d = 1
  auto y = dequant(DType::kQ3_K, b, 256);
  EXPECT_EQ(y[150], 14.0f);
  EXPECT_EQ(y[151], -14.0f);
}

TEST(DequantTest, Q4_KLiteral) {
  std::vector<uint8_t> b(144, 0);
  b[1] = 0x3C;  // d = 1
  b[3] = 0x3C;  // dmin = 1
  // scales: sub-block 0 scale = 0xC1 & 63 = 1, min = 0x42 & 63 = 2; sub-block 4 scale =
  // (0x53 & 15) | (0xC1 >> 6) << 4 = 3 | 48 = 51, min = (0x53 >> 4) | (0x42 >> 6) << 4 = 5 | 16
  // = 21.
  b[4 + 0] = 0xC1;
  b[4 + 4] = 0x42;
  b[4 + 8] = 0x53;
  b[16 + 0] = 0x07;   // element 0: low nibble 7
  b[16 + 64] = 0x0A;  // element 128 (chunk 2, low nibble of qs[64]): 10
  auto y = dequant(DType::kQ4_K, b, 256);
  EXPECT_EQ(y[0], 5.0f);      // 1 * 7 - 2
  EXPECT_EQ(y[128], 489.0f);  // 51 * 10 - 21
  EXPECT_EQ(y[129], -21.0f);
}

TEST(DequantTest, Q5_KLiteral) {
  std::vector<uint8_t> b(176, 0);
  b[1] = 0x3C;        // d = 1
  b[3] = 0x3C;        // dmin = 1
  b[4 + 3] = 2;       // sub-block 3 scale 2
  b[4 + 7] = 1;       // sub-block 3 min 1
  b[48 + 36] = 0xF0;  // element 100: chunk 1, high nibble of qs[32 + 4] = 15
  b[16 + 4] = 0x08;   // fifth bit: bit 100 / 32 = 3 of qh[100 % 32 = 4]
  auto y = dequant(DType::kQ5_K, b, 256);
  EXPECT_EQ(y[100], 61.0f);  // 2 * 31 - 1
  EXPECT_EQ(y[101], -1.0f);
}

TEST(DequantTest, Q6_KLiteral) {
  std::vector<uint8_t> b(210, 0);
  // Element 200: h = 1, k = 2, l = 8: low 4 bits from the high nibble of ql[64 + 8], high bits
  // at shift 4 of qh[32 + 8]; q = (5 | 2 << 4) - 32 = 5; scale index 12 = -3; d = 0.5.
  b[72] = 0x50;
  b[128 + 40] = 0x20;
  b[192 + 12] = static_cast<uint8_t>(-3);
  b[208] = 0x00;
  b[209] = 0x38;
  auto y = dequant(DType::kQ6_K, b, 256);
  EXPECT_EQ(y[200], -7.5f);
  EXPECT_EQ(y[201], 48.0f);  // q = -32 with the same scale: 0.5 * -3 * -32
}

TEST(DequantTest, PlainTypes) {
  const float f32[3] = {1.5f, -0.0f, 3e38f};
  std::vector<uint8_t> b(sizeof(f32));
  std::memcpy(b.data(), f32, sizeof(f32));
  auto y = dequant(DType::kF32, b, 3);
  EXPECT_EQ(std::memcmp(y.data(), f32, sizeof(f32)), 0);

  std::vector<uint8_t> h = {0x00, 0x3C, 0x00, 0xC0, 0x01, 0x00, 0x00, 0x7C};  // 1, -2, 2^-24, inf
  y = dequant(DType::kF16, h, 4);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -2.0f);
  EXPECT_EQ(y[2], std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isinf(y[3]));

  std::vector<uint8_t> bf = {0x80, 0x3F, 0x40, 0xC0};  // 1.0, -3.0
  y = dequant(DType::kBF16, bf, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -3.0f);
}

// ---- built blocks: every level and scale, several blocks per row --------------------------------

TEST(DequantTest, LegacyBuiltBlocks) {
  std::mt19937 rng(1);
  for (bool exact : {true, false}) {
    auto d = [&] { return exact ? kHalf : random_half(rng); };
    auto m = [&] { return exact ? kMinusTwo : random_half(rng); };
    check_row(DType::kQ4_0,
              {testing::build_q4_0(d(), all_levels<32>(rng, 0, 15)),
               testing::build_q4_0(d(), random_levels<32>(rng, 0, 15))},
              exact);
    check_row(DType::kQ4_1,
              {testing::build_q4_1(d(), m(), all_levels<32>(rng, 0, 15)),
               testing::build_q4_1(d(), m(), random_levels<32>(rng, 0, 15))},
              exact);
    check_row(DType::kQ5_0,
              {testing::build_q5_0(d(), all_levels<32>(rng, 0, 31)),
               testing::build_q5_0(d(), random_levels<32>(rng, 0, 31))},
              exact);
    check_row(DType::kQ5_1,
              {testing::build_q5_1(d(), m(), all_levels<32>(rng, 0, 31)),
               testing::build_q5_1(d(), m(), random_levels<32>(rng, 0, 31))},
              exact);
    check_row(DType::kQ8_0,
              {testing::build_q8_0(d(), random_levels<32>(rng, -128, 127)),
               testing::build_q8_0(d(), all_levels<32>(rng, -16, 15))},
              exact);
  }
}

TEST(DequantTest, KQuantBuiltBlocks) {
  std::mt19937 rng(2);
  for (bool exact : {true, false}) {
    auto d = [&] { return exact ? kQuarter : random_half(rng); };
    auto dm = [&] { return exact ? kOne : random_half(rng); };
    std::vector<BuiltBlock> q2, q3, q4, q5, q6;
    for (int blk = 0; blk < 3; ++blk) {
      q2.push_back(testing::build_q2_k(d(), dm(), all_levels<16>(rng, 0, 15),
                                       all_levels<16>(rng, 0, 15), all_levels<256>(rng, 0, 3)));
      q3.push_back(
          testing::build_q3_k(d(), random_levels<16>(rng, 0, 63), all_levels<256>(rng, -4, 3)));
      q4.push_back(testing::build_q4_k(d(), dm(), random_levels<8>(rng, 0, 63),
                                       random_levels<8>(rng, 0, 63), all_levels<256>(rng, 0, 15)));
      q5.push_back(testing::build_q5_k(d(), dm(), random_levels<8>(rng, 0, 63),
                                       random_levels<8>(rng, 0, 63), all_levels<256>(rng, 0, 31)));
      q6.push_back(testing::build_q6_k(d(), random_levels<16>(rng, -128, 127),
                                       all_levels<256>(rng, -32, 31)));
    }
    // Extremes of the 6-bit scale packing: all-ones and all-zero fields.
    std::array<int, 8> ones8;
    ones8.fill(63);
    std::array<int, 16> q3ext;
    for (int s = 0; s < 16; ++s)
      q3ext[s] = s % 2 ? 63 : 0;
    q4.push_back(testing::build_q4_k(d(), dm(), ones8, {}, all_levels<256>(rng, 0, 15)));
    q5.push_back(testing::build_q5_k(d(), dm(), {}, ones8, all_levels<256>(rng, 0, 31)));
    q3.push_back(testing::build_q3_k(d(), q3ext, all_levels<256>(rng, -4, 3)));
    check_row(DType::kQ2_K, q2, exact);
    check_row(DType::kQ3_K, q3, exact);
    check_row(DType::kQ4_K, q4, exact);
    check_row(DType::kQ5_K, q5, exact);
    check_row(DType::kQ6_K, q6, exact);
  }
}

TEST(DequantTest, SupportedTypes) {
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                  DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K,
                  DType::kQ5_K, DType::kQ6_K}) {
    EXPECT_TRUE(can_dequantize(t)) << tensor::dtype_name(t);
    EXPECT_TRUE(can_quantize(t)) << tensor::dtype_name(t);
  }
  for (DType t : {DType::kQ8_1, DType::kQ8_K, DType::kIQ4_NL, DType::kI32, DType::kTQ2_0}) {
    EXPECT_FALSE(can_dequantize(t)) << tensor::dtype_name(t);
    EXPECT_FALSE(can_quantize(t)) << tensor::dtype_name(t);
  }
}

}  // namespace
}  // namespace pagoda::kernels
