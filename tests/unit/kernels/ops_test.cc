// rms_norm, silu_mul, gelu_tanh_mul, softcap, softmax, add_inplace and lora_expand against
// double-precision formulas written here, with aliasing, one-element rows, masked (-inf) and
// extreme inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "isa_guard.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/sum_squares.h"
#include "kernels/isa.h"
#include "kernels/lora_expand.h"
#include "kernels/ops.h"
#include "kernels/team.h"
#include "random_data.h"
#include "tensor/float16.h"

namespace pagoda::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(RmsNormTest, MatchesFormula) {
  for (int64_t dim : {1, 3, 64, 4096}) {
    const int64_t rows = 3;
    auto x = random_vec(static_cast<size_t>(rows * dim), 1, 2.0f);
    const auto w = random_vec(static_cast<size_t>(dim), 2);
    const float eps = 1e-5f;
    std::vector<float> y(x.size());
    rms_norm(x.data(), w.data(), rows, dim, eps, y.data());
    for (int64_t r = 0; r < rows; ++r) {
      double ss = 0;
      for (int64_t i = 0; i < dim; ++i)
        ss += double(x[r * dim + i]) * x[r * dim + i];
      const double inv = 1.0 / std::sqrt(ss / double(dim) + eps);
      for (int64_t i = 0; i < dim; ++i) {
        const double e = x[r * dim + i] * inv * w[i];
        ASSERT_NEAR(y[r * dim + i], e, 1e-6 * std::fabs(e) + 1e-30) << dim << " " << r << " " << i;
      }
    }
    // In place gives the same bits.
    rms_norm(x.data(), w.data(), rows, dim, eps, x.data());
    EXPECT_EQ(x, y);
  }
}

TEST(RmsNormTest, ZeroRowUsesEps) {
  std::vector<float> x(8, 0.0f), w(8, 1.0f), y(8, NAN);
  rms_norm(x.data(), w.data(), 1, 8, 1e-6f, y.data());
  for (float v : y)
    EXPECT_EQ(v, 0.0f);
}

// Bit for bit (NaN: any NaN) over n floats.
void expect_same_bits(const std::vector<float>& out, const std::vector<float>& ref,
                      const std::string& what) {
  ASSERT_EQ(out.size(), ref.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const uint32_t a = std::bit_cast<uint32_t>(out[i]), b = std::bit_cast<uint32_t>(ref[i]);
    ASSERT_TRUE(a == b || (std::isnan(out[i]) && std::isnan(ref[i])))
        << what << " i " << i << ": " << out[i] << " vs " << ref[i];
  }
}

// 32 values whose Σx² in double is exactly halfway between two floats (2^62 + 2^38) in
// sum_squares.h's order but for 2^8 squares: one running sum (ggml's) drops each (below half its
// ulp) and the mean rounds to even, down; the 16 lanes gather them first, keep some, and the mean
// rounds up. A kernel that sums in another order gives another float mean here.
std::vector<float> order_sensitive_row() {
  std::vector<float> x(32, std::ldexp(1.0f, 4));
  x[0] = std::ldexp(1.0f, 31);
  x[16] = std::ldexp(1.0f, 19);
  return x;
}

// Every ISA's rms_norm gives the reference's bits (sum_squares.h's order), for lengths around the
// 16-element step, rows with a wide range of magnitudes, zeros, overflowing squares and NaN, in
// place too.
TEST(RmsNormTest, EveryIsaEqualsReferenceBitForBit) {
  for (int64_t dim : {1, 7, 15, 16, 17, 31, 32, 33, 64, 100, 2048, 2051}) {
    const int64_t rows = 5;
    auto x = random_vec(static_cast<size_t>(rows * dim), 21, 3.0f);
    for (int64_t i = 0; i < dim; ++i) {  // row 1: magnitudes from 2^-60 to 2^60
      x[static_cast<size_t>(dim + i)] *= std::ldexp(1.0f, static_cast<int>(i * 37 % 121) - 60);
      x[static_cast<size_t>(2 * dim + i)] = 0.0f;  // row 2: zero (the mean is eps)
    }
    if (dim == 32) {  // row 0: a mean that depends on the summation order
      const auto row = order_sensitive_row();
      std::copy(row.begin(), row.end(), x.begin());
    }
    x[static_cast<size_t>(3 * dim)] = 3e30f;  // row 3: a square that overflows to inf
    x[static_cast<size_t>(4 * dim + dim / 2)] = NAN;
    const auto w = random_vec(static_cast<size_t>(dim), 22);
    std::vector<float> ref(x.size());
    cpu::reference::rms_norm(x.data(), w.data(), rows, dim, 1e-5f, ref.data());
    for (Isa isa : supported_isas()) {
      const cpu::CpuKernels& k = *cpu::kernels_for(isa);
      if (isa == Isa::kScalar || isa == Isa::kPortable) continue;  // (portable: the reference's)
      ASSERT_NE(k.rms_norm, nullptr) << isa_name(isa);
      std::vector<float> out(x.size(), 1.0f);
      k.rms_norm(x.data(), w.data(), rows, dim, 1e-5f, out.data());
      expect_same_bits(out, ref, std::string(isa_name(isa)) + " dim " + std::to_string(dim));
      auto in_place = x;
      k.rms_norm(in_place.data(), w.data(), rows, dim, 1e-5f, in_place.data());
      expect_same_bits(in_place, ref, std::string(isa_name(isa)) + " in place");
    }
  }
}

TEST(RmsNormTest, SumSquaresFollowsItsOrder) {
  const auto x = order_sensitive_row();
  double lanes[cpu::kSquareLanes] = {};
  for (size_t i = 0; i < x.size(); ++i)
    lanes[i % 16] += static_cast<double>(x[i] * x[i]);
  for (int w = 8; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j)
      lanes[j] += lanes[j + w];
  double s[cpu::kSquareLanes] = {};
  EXPECT_EQ(cpu::sum_squares_finish(s, x.data(), 0, static_cast<int64_t>(x.size())), lanes[0]);
  double sequential = 0;
  for (float v : x)
    sequential += static_cast<double>(v * v);
  EXPECT_NE(static_cast<float>(lanes[0] / 32), static_cast<float>(sequential / 32))
      << "the row should tell the two orders apart";
}

// Every ISA's f16 row store (the f16 KV cache's) gives tensor::fp32_to_fp16's bits: rounding
// ties, the largest finite value and overflow, subnormals and their rounding to zero, signed
// zeros, infinities and NaNs with payloads (to the plain quiet NaN), for lengths around 8.
TEST(F16RowTest, EveryIsaEqualsFp32ToFp16) {
  auto x = random_vec(1003, 25, 100.0f);
  const float edges[] = {0.0f,
                         -0.0f,
                         65504.0f,
                         65519.99f,
                         65520.0f,
                         -65520.0f,
                         1e9f,
                         INFINITY,
                         -INFINITY,
                         std::bit_cast<float>(0x7fc12345u),
                         std::bit_cast<float>(0xff812345u),
                         std::bit_cast<float>(0x7f800001u),
                         6.1035156e-05f,
                         6.0e-05f,
                         5.9604645e-08f,
                         2.9802322e-08f,
                         2.9802326e-08f,
                         -1e-7f,
                         1e-30f,
                         1.00048828125f,
                         1.00146484375f,
                         -2049.0f,
                         2051.0f};
  std::copy(std::begin(edges), std::end(edges), x.begin());
  for (size_t i = 40; i < 200; ++i)  // subnormal range, every rounding case
    x[i] = std::ldexp(x[i], -30);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9},
                    static_cast<int64_t>(x.size())}) {
    std::vector<uint16_t> ref(x.size(), 0xAAAA);
    for (int64_t i = 0; i < n; ++i)
      ref[static_cast<size_t>(i)] = tensor::fp32_to_fp16(x[static_cast<size_t>(i)]);
    for (Isa isa : supported_isas()) {
      const cpu::CpuKernels& k = *cpu::kernels_for(isa);
      if (isa == Isa::kScalar || isa == Isa::kPortable) continue;
      ASSERT_NE(k.fp32_to_f16_row, nullptr) << isa_name(isa);
      std::vector<uint16_t> out(x.size(), 0xAAAA);
      k.fp32_to_f16_row(x.data(), out.data(), n);
      for (size_t i = 0; i < x.size(); ++i)
        ASSERT_EQ(out[i], ref[i]) << isa_name(isa) << " n " << n << " i " << i << " x " << x[i];
    }
  }
}

TEST(AddInplaceTest, EveryIsaEqualsReference) {
  for (int64_t n : {0, 1, 7, 8, 15, 16, 17, 33, 1001}) {
    auto y = random_vec(static_cast<size_t>(n), 23);
    const auto x = random_vec(static_cast<size_t>(n), 24);
    auto ref = y;
    cpu::reference::add_inplace(ref.data(), x.data(), n);
    for (Isa isa : supported_isas()) {
      const cpu::CpuKernels& k = *cpu::kernels_for(isa);
      if (isa == Isa::kScalar || isa == Isa::kPortable) continue;
      ASSERT_NE(k.add_inplace, nullptr) << isa_name(isa);
      auto out = y;
      k.add_inplace(out.data(), x.data(), n);
      expect_same_bits(out, ref, std::string(isa_name(isa)) + " n " + std::to_string(n));
    }
  }
}

TEST(SiluMulTest, MatchesFormula) {
  auto g = random_vec(1000, 3, 4.0f);
  g[0] = -100;
  g[1] = 100;
  g[2] = 0;
  g[3] = -88.5f;
  const auto u = random_vec(1000, 4);
  std::vector<float> out(g.size());
  silu_mul(g.data(), u.data(), static_cast<int64_t>(g.size()), out.data());
  for (size_t i = 0; i < g.size(); ++i) {
    const double e = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    // Below g = -86 softmax_exp flushes to 0 (|silu| < 4e-36 there).
    ASSERT_NEAR(out[i], e, 4e-7 * std::fabs(e) + 4e-36) << i << " gate " << g[i];
    ASSERT_TRUE(std::isfinite(out[i]));
  }
  silu_mul(g.data(), u.data(), static_cast<int64_t>(g.size()), g.data());  // out aliases gate
  EXPECT_EQ(g, out);
}

// Every ISA's kernel gives the reference's bits (softmax_exp.h's silu), edge values included, for
// lengths around the 8-lane step.
TEST(SiluMulTest, EveryIsaEqualsReferenceBitForBit) {
  auto g = random_vec(1003, 7, 30.0f);
  const float edges[] = {0.0f,   -0.0f, 1e-40f,  -1e-40f,  86.0f,    -86.0f,
                         -86.5f, 87.9f, -100.0f, 100.0f,   INFINITY, -INFINITY,
                         NAN,    -NAN,  3.4e38f, -3.4e38f, 1e-30f,   -1e-30f};
  std::copy(std::begin(edges), std::end(edges), g.begin());
  const auto u = random_vec(g.size(), 8);
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9},
                    static_cast<int64_t>(g.size())}) {
    std::vector<float> ref(g.size(), 1.0f);
    cpu::reference::silu_mul(g.data(), u.data(), n, ref.data());
    for (Isa isa : supported_isas()) {
      const cpu::CpuKernels& k = *cpu::kernels_for(isa);
      if (isa == Isa::kScalar || isa == Isa::kPortable) continue;  // (portable: the reference's)
      ASSERT_NE(k.silu_mul, nullptr) << isa_name(isa);
      std::vector<float> out(g.size(), 1.0f);
      k.silu_mul(g.data(), u.data(), n, out.data());
      for (size_t i = 0; i < g.size(); ++i) {
        const uint32_t a = std::bit_cast<uint32_t>(out[i]), b = std::bit_cast<uint32_t>(ref[i]);
        ASSERT_TRUE(a == b || (std::isnan(out[i]) && std::isnan(ref[i])))
            << isa_name(isa) << " n " << n << " i " << i << " gate " << g[i] << ": " << out[i]
            << " vs " << ref[i];
      }
    }
  }
}

// Large inputs are split across threads in slices: the same bits as one thread, aliasing allowed.
TEST(SiluMulTest, ThreadSplitEqualsOneThread) {
  const auto g = random_vec(50001, 5, 4.0f);
  const auto u = random_vec(50001, 6);
  const auto n = static_cast<int64_t>(g.size());
  const int saved = num_threads();
  set_num_threads(1);
  std::vector<float> one(g.size());
  silu_mul(g.data(), u.data(), n, one.data());
  set_num_threads(std::max(saved, 3));  // odd slices even on a 1-core machine
  std::vector<float> split(g.size());
  silu_mul(g.data(), u.data(), n, split.data());
  auto in_place = g;
  silu_mul(in_place.data(), u.data(), n, in_place.data());
  set_num_threads(saved);
  EXPECT_EQ(split, one);
  EXPECT_EQ(in_place, one);
}

// The bandwidth probe's sum: every ISA's streaming kernel and the thread split give the plain
// sum (wrapping), for lengths around its split into 8 parts of whole 8-word lines.
TEST(GeluTanhMulTest, MatchesFormula) {
  auto g = random_vec(4099, 11, 4.0f);
  g.insert(g.end(), {0.0f, -0.0f, -30.0f, 30.0f, 1e-20f});
  const auto u = random_vec(g.size(), 12);
  std::vector<float> out(g.size());
  gelu_tanh_mul(g.data(), u.data(), static_cast<int64_t>(g.size()), out.data());
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i];
    const double gelu = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    const double e = gelu * u[i];
    ASSERT_NEAR(out[i], e, 1e-6 * (1 + std::fabs(e))) << "x = " << x;
  }
  gelu_tanh_mul(g.data(), u.data(), static_cast<int64_t>(g.size()), g.data());  // out aliases gate
  EXPECT_EQ(g, out);
}

TEST(SoftcapTest, MatchesFormula) {
  auto x = random_vec(5000, 13, 3.0f);
  x.insert(x.end(), {0.0f, 1e6f, -1e6f, kInf, -kInf});
  for (const float cap : {0.4f, 3.0f, 30.0f}) {
    std::vector<float> y = x;
    softcap(y.data(), static_cast<int64_t>(y.size()), cap);
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = cap * std::tanh(double(x[i]) / cap);
      ASSERT_NEAR(y[i], e, 1e-6 * cap) << "x = " << x[i] << " cap " << cap;
      ASSERT_LE(std::fabs(y[i]), cap);
    }
  }
}

TEST(StreamSumTest, EqualsPlainSum) {
  std::mt19937_64 rng(11);
  std::vector<uint64_t> v(100003);
  for (auto& x : v)
    x = rng();
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{33}, size_t{63},
                   size_t{64}, size_t{65}, size_t{127}, size_t{129}, v.size()}) {
    SCOPED_TRACE(n);
    const uint64_t expected = std::accumulate(v.begin(), v.begin() + n, uint64_t{0});
    EXPECT_EQ(cpu::reference::sum_u64(v.data(), n), expected);
    for (Isa isa : supported_isas()) {
      const cpu::CpuKernels& k = *cpu::kernels_for(isa);
      if (isa == Isa::kScalar) continue;  // the reference loop above
      ASSERT_NE(k.sum_u64, nullptr) << isa_name(isa);
      EXPECT_EQ(k.sum_u64(v.data(), n), expected) << isa_name(isa);
    }
    const int saved = num_threads();
    for (int threads : {1, 3}) {
      set_num_threads(threads);
      EXPECT_EQ(stream_sum(v.data(), n), expected) << threads << " threads";
    }
    set_num_threads(saved);
  }
}

TEST(SoftmaxTest, MatchesFormula) {
  for (int64_t dim : {1, 2, 7, 1000}) {
    const int64_t rows = 4;
    auto x = random_vec(static_cast<size_t>(rows * dim), 5, 3.0f);
    const auto orig = x;
    softmax(x.data(), rows, dim);
    for (int64_t r = 0; r < rows; ++r) {
      double mx = -INFINITY, sum = 0, total = 0;
      for (int64_t i = 0; i < dim; ++i)
        mx = std::max(mx, double(orig[r * dim + i]));
      for (int64_t i = 0; i < dim; ++i)
        sum += std::exp(double(orig[r * dim + i]) - mx);
      for (int64_t i = 0; i < dim; ++i) {
        const double e = std::exp(double(orig[r * dim + i]) - mx) / sum;
        ASSERT_NEAR(x[r * dim + i], e, 2e-6 * e + 1e-38) << dim << " " << r << " " << i;
        total += x[r * dim + i];
      }
      EXPECT_NEAR(total, 1.0, 1e-5);
    }
  }
}

TEST(SoftmaxTest, MaskedAndExtremeRows) {
  // Row 0: two masked entries; row 1: huge logits (no overflow); row 2: every entry masked.
  std::vector<float> x = {1.0f,  -kInf, 1.0f,  -kInf, 1e4f,  1e4f - 1,
                          -1e4f, 1e4f,  -kInf, -kInf, -kInf, -kInf};
  softmax(x.data(), 3, 4);
  EXPECT_FLOAT_EQ(x[0], 0.5f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_FLOAT_EQ(x[2], 0.5f);
  EXPECT_EQ(x[3], 0.0f);
  const double e1 = std::exp(-1.0);
  EXPECT_NEAR(x[4], 1 / (2 + e1), 1e-6);
  EXPECT_NEAR(x[5], e1 / (2 + e1), 1e-6);
  EXPECT_EQ(x[6], 0.0f);
  for (int i = 8; i < 12; ++i)
    EXPECT_EQ(x[i], 0.0f) << "a fully masked row has no mass";
}

TEST(AddInplaceTest, Adds) {
  auto y = random_vec(101, 6);
  const auto x = random_vec(101, 7);
  const auto orig = y;
  add_inplace(y.data(), x.data(), 101);
  for (size_t i = 0; i < y.size(); ++i)
    EXPECT_EQ(y[i], orig[i] + x[i]);
}

// head_matmul: y(t, h) = x(t, h) · w_h for strided heads (MLA's absorbed projections), against a
// double formula; outputs outside the heads' rows untouched; several threads (heads split) and
// one token at a time give the same bits as the batch.
TEST(HeadMatmulTest, MatchesFormulaAndBatchedEqualsAlone) {
  const int64_t heads = 5, in = 24, out = 40, T = 7;
  const HeadRows xs{heads * 32 + 3, 32}, ys{heads * 48, 48};  // padded, offset rows
  const auto w = random_vec(static_cast<size_t>(heads * in * out), 11, 0.3f);
  const auto x = random_vec(static_cast<size_t>(T * xs.token_stride), 12);
  std::vector<float> y(static_cast<size_t>(T * ys.token_stride), -7.0f);
  head_matmul(w.data(), heads, in, out, x.data() + 3, xs, T, y.data() + 2, ys);
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < heads; ++h) {
      const float* xr = x.data() + 3 + t * xs.token_stride + h * xs.head_stride;
      const float* yr = y.data() + 2 + t * ys.token_stride + h * ys.head_stride;
      for (int64_t r = 0; r < out; ++r) {
        double want = 0, mag = 0;
        for (int64_t c = 0; c < in; ++c) {
          want += double(xr[c]) * w[static_cast<size_t>((h * in + c) * out + r)];
          mag += std::fabs(double(xr[c]) * w[static_cast<size_t>((h * in + c) * out + r)]);
        }
        ASSERT_NEAR(yr[r], want, 1e-6 * mag + 1e-7) << t << " " << h << " " << r;
      }
      EXPECT_EQ(yr[-1], -7.0f);  // (head 0: y's own first elements; others: the pad)
      EXPECT_EQ(yr[out], -7.0f);
    }
  }
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> alone(static_cast<size_t>(ys.token_stride), -7.0f);
    head_matmul(w.data(), heads, in, out, x.data() + 3 + t * xs.token_stride, xs, 1,
                alone.data() + 2, ys);
    for (int64_t h = 0; h < heads; ++h) {
      ASSERT_EQ(std::memcmp(alone.data() + 2 + h * ys.head_stride,
                            y.data() + 2 + t * ys.token_stride + h * ys.head_stride,
                            static_cast<size_t>(out) * sizeof(float)),
                0)
          << t << " " << h;
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels

namespace pagoda::kernels {
namespace {

// bt [rank, out] of dtype (F16: the values rounded), as bytes and as the floats they hold.
struct ExpandMatrix {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
  WeightView view;
};
ExpandMatrix expand_matrix(tensor::DType dtype, int64_t rank, int64_t out, uint32_t seed) {
  ExpandMatrix m;
  m.values = random_vec(static_cast<size_t>(rank * out), seed, 0.5f);
  const size_t elem = dtype == tensor::DType::kF16 ? 2 : 4;
  m.bytes.resize(m.values.size() * elem);
  for (size_t i = 0; i < m.values.size(); ++i) {
    if (dtype == tensor::DType::kF16) {
      const uint16_t h = tensor::fp32_to_fp16(m.values[i]);
      std::memcpy(m.bytes.data() + 2 * i, &h, 2);
      m.values[i] = tensor::fp16_to_fp32(h);
    } else {
      std::memcpy(m.bytes.data() + 4 * i, &m.values[i], 4);
    }
  }
  m.view.dtype = dtype;
  m.view.rows = rank;
  m.view.cols = out;
  m.view.row_bytes = static_cast<size_t>(out) * elem;
  m.view.data = m.bytes.data();
  return m;
}

// lora_expand: y(i) += mid_i · bt against a double formula, rows placed by index with a padded
// ldy (the pad and the rows not named untouched), several jobs of different ranks and widths in
// one call, with one and two threads (the same bits), and each job alone giving the same bits.
TEST(LoraExpandTest, MatchesFormulaAndJobsAreIndependent) {
  for (tensor::DType dtype : {tensor::DType::kF16, tensor::DType::kF32}) {
    // 1400 columns: 21 pieces of 64 and a tail of 56; enough work for two threads.
    const ExpandMatrix b0 = expand_matrix(dtype, 16, 1400, 31);
    const ExpandMatrix b1 = expand_matrix(dtype, 5, 24, 32);
    const int64_t ld0 = 1403, ld1 = 24, T = 9;
    const auto mid0 = random_vec(6 * 16, 33);
    const auto mid1 = random_vec(3 * 5, 34);
    const std::vector<int32_t> index0 = {8, 0, 3, 5, 1, 7};  // rows of y0 (2, 4, 6: none)
    const auto y0_init = random_vec(static_cast<size_t>(T * ld0), 35);
    const auto y1_init = random_vec(static_cast<size_t>(3 * ld1), 36);
    std::vector<float> first_y0, first_y1;
    for (int threads : {1, 2}) {
      const ThreadsGuard guard(threads);
      auto y0 = y0_init, y1 = y1_init;
      const LoraExpandJob jobs[] = {{&b0.view, mid0.data(), y0.data(), ld0, index0.data(), 6},
                                    {&b1.view, mid1.data(), y1.data(), ld1, nullptr, 3}};
      lora_expand(jobs);
      for (int64_t i = 0; i < 6; ++i) {
        const int64_t row = index0[static_cast<size_t>(i)];
        for (int64_t o = 0; o < ld0; ++o) {
          const size_t at = static_cast<size_t>(row * ld0 + o);
          if (o >= 1400) {
            ASSERT_EQ(y0[at], y0_init[at]) << "pad " << row << " " << o;
            continue;
          }
          double want = y0_init[at], mag = std::fabs(want);
          for (int64_t k = 0; k < 16; ++k) {
            const double t = double(mid0[static_cast<size_t>(i * 16 + k)]) *
                             b0.values[static_cast<size_t>(k * 1400 + o)];
            want += t;
            mag += std::fabs(t);
          }
          ASSERT_NEAR(y0[at], want, 1e-6 * mag) << row << " " << o;
        }
      }
      for (int64_t row : {2, 4, 6}) {
        for (int64_t o = 0; o < ld0; ++o) {
          const size_t at = static_cast<size_t>(row * ld0 + o);
          ASSERT_EQ(y0[at], y0_init[at]) << "row " << row << " has no job";
        }
      }
      for (int64_t i = 0; i < 3; ++i) {
        for (int64_t o = 0; o < 24; ++o) {
          double want = y1_init[static_cast<size_t>(i * ld1 + o)], mag = std::fabs(want);
          for (int64_t k = 0; k < 5; ++k) {
            const double t = double(mid1[static_cast<size_t>(i * 5 + k)]) *
                             b1.values[static_cast<size_t>(k * 24 + o)];
            want += t;
            mag += std::fabs(t);
          }
          ASSERT_NEAR(y1[static_cast<size_t>(i * ld1 + o)], want, 1e-6 * mag) << i << " " << o;
        }
      }
      if (threads == 1) {
        first_y0 = y0;
        first_y1 = y1;
        // Row 2 of job 1 alone: the same bits as in the call with every job.
        auto alone = y1_init;
        const LoraExpandJob one{&b1.view, mid1.data() + 2 * 5, alone.data() + 2 * ld1, ld1, nullptr,
                                1};
        lora_expand(std::span<const LoraExpandJob>(&one, 1));
        ASSERT_EQ(std::memcmp(alone.data() + 2 * ld1, y1.data() + 2 * ld1, 24 * sizeof(float)), 0);
      } else {
        EXPECT_EQ(y0, first_y0) << "two threads";
        EXPECT_EQ(y1, first_y1) << "two threads";
      }
    }
  }
}

// Every ISA's expand equals the reference bit for bit: row tiles of 1-4 and their remainders,
// column ranges starting and ending off the 64/16/8-lane steps (AVX2's scalar tail, AVX-512's
// masked one), both dtypes.
TEST(LoraExpandTest, EveryIsaEqualsReference) {
  for (tensor::DType dtype : {tensor::DType::kF16, tensor::DType::kF32}) {
    for (const auto& [rank, out] :
         {std::pair<int64_t, int64_t>{1, 77}, {3, 77}, {16, 77}, {33, 77}, {16, 211}, {8, 211}}) {
      const ExpandMatrix b = expand_matrix(dtype, rank, out, static_cast<uint32_t>(40 + rank));
      for (int64_t rows : {1, 2, 3, 4, 5, 9}) {
        const auto mid = random_vec(static_cast<size_t>(rows * rank), 50, 2.0f);
        std::vector<int32_t> index(static_cast<size_t>(rows));
        for (int64_t i = 0; i < rows; ++i)  // rows + 1 down to 2: distinct, out of order
          index[static_cast<size_t>(i)] = static_cast<int32_t>(rows + 1 - i);
        const int64_t ldy = out + 5;
        const auto y0 = random_vec(static_cast<size_t>((rows + 2) * ldy), 51);
        for (const auto& [c0, c1] : {std::pair<int64_t, int64_t>{0, out},
                                     {3, 40},
                                     {16, 24},
                                     {5, 6},
                                     {64, out},
                                     {7, out - 3}}) {
          for (const int32_t* idx :
               {static_cast<const int32_t*>(nullptr), static_cast<const int32_t*>(index.data())}) {
            auto ref = y0;
            cpu::reference::lora_expand(b.view, mid.data(), rows, idx, ref.data(), ldy, c0, c1);
            for (Isa isa : supported_isas()) {
              const cpu::CpuKernels& k = *cpu::kernels_for(isa);
              if (isa == Isa::kScalar || isa == Isa::kPortable) continue;
              ASSERT_NE(k.lora_expand, nullptr) << isa_name(isa);
              auto got = y0;
              k.lora_expand(b.view, mid.data(), rows, idx, got.data(), ldy, c0, c1);
              expect_same_bits(got, ref,
                               std::string(isa_name(isa)) + " rank " + std::to_string(rank) +
                                   " rows " + std::to_string(rows) + " cols " + std::to_string(c0) +
                                   ".." + std::to_string(c1) + (idx != nullptr ? " indexed" : ""));
            }
          }
        }
      }
    }
  }
}

// lora_apply (shrink and expand in one op) against matmul_grouped then lora_expand, the two ops it
// replaces: the same bits in mid and y, with 1 and 2 threads, inside a team and not, for job sets
// that split as whole jobs (equal adapters) and that do not (one job, uneven jobs: the split of A
// rows, a barrier, the split of columns); inputs in place, by row number, of one row and empty.
TEST(LoraApplyTest, EqualsShrinkThenExpand) {
  struct Spec {
    int32_t input;
    int64_t rank, out;
  };
  // Three outputs, y[T, out] with a padded ldy: out 1000 (ld 1003), 40 (ld 40), 77 (ld 80).
  constexpr int64_t kLds[3] = {1003, 40, 80};
  const Spec specs[] = {{0, 16, 1000}, {0, 16, 40}, {1, 16, 1000}, {1, 16, 40}, {1, 3, 77},
                        {2, 8, 1000},  {3, 16, 40}, {4, 16, 1000}, {4, 16, 40}};
  // With two threads: {0} and {0, 1} split A rows and columns (one job, or two uneven ones);
  // {0, 2, 7}, {0, 1, 2, 3} and all split as whole jobs; {4, 5} is worth one thread; {6} has no
  // rows.
  const std::vector<std::vector<size_t>> cases = {
      {0, 1, 2, 3, 4, 5, 6, 7, 8}, {0}, {0, 1}, {0, 2, 7}, {0, 1, 2, 3}, {4, 5}, {6}};
  const int64_t in = 1024, T = 24;
  const auto x = random_vec(static_cast<size_t>(T * in), 60, 2.0f);
  const std::vector<int32_t> index1 = {20, 0, 17, 23, 12};  // input 1's rows, out of order
  // Input 0: rows 2..9 in place; 1: by row number; 2: row 10 alone; 3: none; 4: rows 14..15.
  const GroupedInput inputs[] = {{x.data() + 2 * in, nullptr, 8},
                                 {x.data(), index1.data(), 5},
                                 {x.data() + 10 * in, nullptr, 1},
                                 {x.data(), nullptr, 0},
                                 {x.data() + 14 * in, nullptr, 2}};
  const int64_t first_row[] = {2, 0, 10, 0, 14};
  for (tensor::DType dtype : {tensor::DType::kF16, tensor::DType::kF32}) {
    std::vector<ExpandMatrix> a, bt;
    for (size_t s = 0; s < std::size(specs); ++s) {
      a.push_back(expand_matrix(dtype, specs[s].rank, in, static_cast<uint32_t>(70 + s)));
      bt.push_back(
          expand_matrix(dtype, specs[s].rank, specs[s].out, static_cast<uint32_t>(90 + s)));
    }
    std::vector<std::vector<float>> y_init;
    for (int o = 0; o < 3; ++o)
      y_init.push_back(random_vec(static_cast<size_t>(T * kLds[o]), static_cast<uint32_t>(61 + o)));
    const auto out_of = [&](int64_t out) { return out == 1000 ? 0 : out == 40 ? 1 : 2; };
    for (const std::vector<size_t>& c : cases) {
      // The two ops.
      std::vector<std::vector<float>> want = y_init;
      std::vector<std::vector<float>> want_mid(c.size());
      std::vector<GroupedJob> shrink;
      std::vector<LoraExpandJob> expand;
      for (size_t j = 0; j < c.size(); ++j) {
        const Spec& s = specs[c[j]];
        const GroupedInput& input = inputs[s.input];
        want_mid[j].assign(static_cast<size_t>(std::max<int64_t>(1, input.m * s.rank)), 0.0f);
        shrink.push_back({&a[c[j]].view, s.input, want_mid[j].data()});
        const int o = out_of(s.out);
        expand.push_back({&bt[c[j]].view, want_mid[j].data(),
                          want[o].data() + first_row[s.input] * kLds[o], kLds[o], input.rows,
                          input.m});
      }
      matmul_grouped(inputs, shrink);
      lora_expand(expand);
      for (int threads : {1, 2}) {
        for (bool team : {false, true}) {
          const ThreadsGuard guard(threads);
          std::vector<std::vector<float>> y = y_init;
          std::vector<std::vector<float>> mid(c.size());
          std::vector<LoraJob> jobs;
          for (size_t j = 0; j < c.size(); ++j) {
            const Spec& s = specs[c[j]];
            mid[j].assign(want_mid[j].size(), 0.0f);
            const int o = out_of(s.out);
            LoraJob job;
            job.a = a[c[j]].view;
            job.bt = bt[c[j]].view;
            job.input = s.input;
            job.mid = mid[j].data();
            job.y = y[static_cast<size_t>(o)].data() + first_row[s.input] * kLds[o];
            job.ldy = kLds[o];
            jobs.push_back(job);
          }
          if (team) {
            run_in_team([&] { lora_apply(inputs, jobs); });
          } else {
            lora_apply(inputs, jobs);
          }
          const std::string what = std::string(tensor::dtype_name(dtype)) + " case of " +
                                   std::to_string(c.size()) + " first " + std::to_string(c[0]) +
                                   " threads " + std::to_string(threads) +
                                   (team ? " in a team" : "");
          for (size_t j = 0; j < c.size(); ++j)
            expect_same_bits(mid[j], want_mid[j], what + " mid " + std::to_string(j));
          for (int o = 0; o < 3; ++o)
            expect_same_bits(y[static_cast<size_t>(o)], want[static_cast<size_t>(o)],
                             what + " y " + std::to_string(o));
        }
      }
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
