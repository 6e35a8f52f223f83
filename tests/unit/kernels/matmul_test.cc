// matmul and get_rows. The oracle is ggml's matmul semantics written out plainly in this file:
// each activation row is quantised to the weight type's vec-dot type by an independent naive
// quantiser (checked here bit for bit against the kernels' converters on every ISA), then
// y = Σ_k w_k · x̂_k in double over the dequantised weights (for Q4_1/Q5_1 the min term uses the
// Q8_1 block's stored s, as ggml does). Every ISA path must also equal the scalar reference bit
// for bit (odd shapes, m = 1..17, tails, bias), and a row computed in a batch must equal the same
// row computed alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "isa_guard.h"
#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kernels/team.h"
#include "random_data.h"
#include "tensor/dtype.h"
#include "tensor/float16.h"

namespace pagoda::kernels {
namespace {

using cpu::ActType;
using tensor::DType;

// Activation-like rows: Gaussian with varying spread, outliers, an all-zero stretch and exact
// half-way values (x = (k + 0.5) · amax / 127 hits the rounding rule).
std::vector<float> activation_like(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(n);
  float spread = 1;
  for (size_t i = 0; i < n; ++i) {
    if (i % 40 == 0) spread = 0.1f + static_cast<float>(rng() % 100) / 20;
    v[i] = spread * g(rng);
    if (i % 97 == 13) v[i] *= 8;
  }
  if (n >= 64) {
    for (size_t i = 32; i < 64; ++i)
      v[i] = 0;  // a zero block
  }
  if (n >= 96) {
    for (size_t i = 64; i < 96; ++i)
      v[i] = static_cast<float>(static_cast<int>(i % 9) - 4) + 0.5f;  // .5 ties against 4.5
    v[64] = 127.0f / 8;
  }
  return v;
}

// ---- naive ggml activation quantisers (independent of the code under test) ----------------

struct NaiveAct {
  std::vector<int> q;        // [n]
  std::vector<double> d;     // per block (Q8_0/Q8_1: 32, Q8_K: 256)
  std::vector<double> s;     // Q8_1: f16(Σq · d)
  std::vector<int> sums;     // Q8_0/Q8_1: per 32; Q8_K: per 16
  std::vector<double> vals;  // float types
};

float f16_round(float x) {
  return tensor::fp16_to_fp32(tensor::fp32_to_fp16(x));
}

NaiveAct naive_quantize(ActType t, const float* x, int64_t n) {
  NaiveAct a;
  if (t == ActType::kF32 || t == ActType::kF16 || t == ActType::kBF16) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = t == ActType::kF32   ? x[i]
                      : t == ActType::kF16 ? f16_round(x[i])
                                           : tensor::bf16_to_fp32(tensor::fp32_to_bf16(x[i]));
      a.vals.push_back(v);
    }
    return a;
  }
  if (t == ActType::kQ8_K) {
    for (int64_t b = 0; b < n / 256; ++b) {
      float amax = 0, max = 0;
      for (int j = 0; j < 256; ++j) {
        if (std::fabs(x[b * 256 + j]) > amax) {
          amax = std::fabs(x[b * 256 + j]);
          max = x[b * 256 + j];
        }
      }
      const float iscale = amax == 0 ? 0.0f : -127.f / max;
      for (int j = 0; j < 256; ++j) {
        // ggml's nearest_int: round half to even.
        const int v = static_cast<int>(std::nearbyint(iscale * x[b * 256 + j]));
        a.q.push_back(std::min(127, v));
      }
      a.d.push_back(amax == 0 ? 0.0 : static_cast<double>(1 / iscale));
      for (int j = 0; j < 16; ++j) {
        int s = 0;
        for (int i = 0; i < 16; ++i)
          s += a.q[static_cast<size_t>(b * 256 + j * 16 + i)];
        a.sums.push_back(s);
      }
    }
    return a;
  }
  for (int64_t b = 0; b < n / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j)
      amax = std::max(amax, std::fabs(x[b * 32 + j]));
    const float d = amax / 127;
    const float id = d != 0 ? 1 / d : 0;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = static_cast<int>(std::round(x[b * 32 + j] * id));  // half away from zero
      a.q.push_back(q);
      sum += q;
    }
    a.d.push_back(f16_round(d));
    a.s.push_back(f16_round(static_cast<float>(sum) * d));
    a.sums.push_back(sum);
  }
  return a;
}

const ActType kActTypes[] = {ActType::kF32,  ActType::kF16,  ActType::kBF16,
                             ActType::kQ8_0, ActType::kQ8_1, ActType::kQ8_K};

TEST(ActQuantTest, EveryIsaMatchesNaiveGgmlQuantisers) {
  for (Isa isa : supported_isas()) {
    const cpu::CpuKernels& k = *cpu::kernels_for(isa);
    for (ActType t : kActTypes) {
      for (int64_t n : {256, 512, 2048}) {
        SCOPED_TRACE(::testing::Message()
                     << isa_name(isa) << " type " << static_cast<int>(t) << " n " << n);
        const int64_t m = 3;
        std::vector<float> x;
        for (int64_t i = 0; i < m; ++i) {
          const auto row = activation_like(static_cast<size_t>(n), static_cast<uint32_t>(n + i));
          x.insert(x.end(), row.begin(), row.end());
        }
        const cpu::ActLayout l = cpu::act_layout(t, n);
        std::vector<uint8_t> buf(l.row_bytes * m + 64);
        uint8_t* base = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
        k.quantize_acts(l, x.data(), m, base);
        for (int64_t i = 0; i < m; ++i) {
          const NaiveAct want = naive_quantize(t, x.data() + i * n, n);
          const cpu::ActRow got = cpu::act_row(l, base + i * l.row_bytes);
          if (!want.vals.empty()) {
            for (int64_t j = 0; j < n; ++j)
              ASSERT_EQ(got.vals[j], want.vals[static_cast<size_t>(j)])
                  << "row " << i << " j " << j;
            continue;
          }
          for (int64_t j = 0; j < n; ++j)
            ASSERT_EQ(got.qs[j], want.q[static_cast<size_t>(j)]) << "row " << i << " j " << j;
          for (size_t b = 0; b < want.d.size(); ++b) {
            ASSERT_EQ(static_cast<double>(got.d[b]), want.d[b]) << "row " << i << " block " << b;
            if (t == ActType::kQ8_1) {
              ASSERT_EQ(static_cast<double>(got.s[b]), want.s[b]);
            }
          }
          for (size_t b = 0; b < want.sums.size(); ++b)
            ASSERT_EQ(got.sums[b], want.sums[b]) << "row " << i << " sum " << b;
        }
      }
    }
  }
}

// ---- matmul ---------------------------------------------------------------------------------

// A weight matrix in `dtype` built by quantising random values; keeps the bytes alive.
struct Weight {
  std::vector<uint8_t> bytes;
  WeightView view;
};

Weight make_weight(DType dtype, int64_t rows, int64_t cols, uint32_t seed, size_t misalign = 0) {
  const auto f = random_vec(static_cast<size_t>(rows * cols), seed, 0.5f);
  const size_t row_bytes = *tensor::row_size_bytes(dtype, static_cast<uint64_t>(cols));
  Weight w;
  w.bytes.resize(misalign + row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    quantize_row(dtype, f.data() + r * cols, w.bytes.data() + misalign + r * row_bytes, cols);
  }
  w.view = WeightView{dtype, rows, cols, row_bytes, w.bytes.data() + misalign};
  return w;
}

// Q4_1/Q5_1 block min (f16 at byte 2 of each 20/24-byte block).
double legacy_min(const WeightView& w, int64_t r, int64_t b) {
  const size_t block_bytes = w.dtype == DType::kQ4_1 ? 20 : 24;
  const uint8_t* p = w.row(r) + b * static_cast<int64_t>(block_bytes) + 2;
  return tensor::fp16_to_fp32(static_cast<uint16_t>(p[0] | (p[1] << 8)));
}

// y[i, r] per ggml's semantics in double, and Σ|terms| for the tolerance.
std::vector<double> oracle_matmul(const WeightView& w, const std::vector<float>& x, int64_t m,
                                  const float* bias, std::vector<double>* abs_sum) {
  const ActType t = cpu::act_type_for(w.dtype);
  const bool with_min = w.dtype == DType::kQ4_1 || w.dtype == DType::kQ5_1;
  std::vector<float> wr(static_cast<size_t>(w.cols));
  std::vector<double> y(static_cast<size_t>(m * w.rows));
  abs_sum->assign(y.size(), 0);
  std::vector<NaiveAct> acts;
  for (int64_t i = 0; i < m; ++i)
    acts.push_back(naive_quantize(t, x.data() + i * w.cols, w.cols));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.dtype, w.row(r), wr.data(), w.cols);
    for (int64_t i = 0; i < m; ++i) {
      const NaiveAct& a = acts[static_cast<size_t>(i)];
      double acc = bias ? bias[r] : 0.0;
      double mag = bias ? std::fabs(bias[r]) : 0.0;
      for (int64_t c = 0; c < w.cols; ++c) {
        double xv;
        if (!a.vals.empty()) {
          xv = a.vals[static_cast<size_t>(c)];
        } else {
          const int64_t bs = t == ActType::kQ8_K ? 256 : 32;
          xv = a.d[static_cast<size_t>(c / bs)] * a.q[static_cast<size_t>(c)];
        }
        double wv = wr[static_cast<size_t>(c)];
        if (with_min) wv -= legacy_min(w, r, c / 32);  // the min term goes through s below
        acc += wv * xv;
        mag += std::fabs(wv * xv);
      }
      if (with_min) {
        for (int64_t b = 0; b < w.cols / 32; ++b) {
          acc += legacy_min(w, r, b) * a.s[static_cast<size_t>(b)];
          mag += std::fabs(legacy_min(w, r, b) * a.s[static_cast<size_t>(b)]);
        }
      }
      y[static_cast<size_t>(i * w.rows + r)] = acc;
      (*abs_sum)[static_cast<size_t>(i * w.rows + r)] = mag;
    }
  }
  return y;
}

const DType kAllTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1,
                           DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,
                           DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

struct Shape {
  int64_t rows, cols, m;
};

class MatmulTest : public ::testing::TestWithParam<DType> {};

// w plus the active ISA's pre-packed copy; view.packed stays null when there is none.
struct Packed {
  std::vector<uint8_t> bytes;
  WeightView view;
};
Packed packed_of(const WeightView& w) {
  Packed p{pack_weight(w), w};
  p.view.packed = p.bytes.empty() ? nullptr : p.bytes.data();
  return p;
}

TEST_P(MatmulTest, MatchesGgmlSemantics) {
  const DType t = GetParam();
  const int64_t bs = tensor::dtype_info(t).block_size;
  const int64_t cb = bs == 1 ? 256 : std::max<int64_t>(bs, 256);  // whole Q8_K blocks
  std::vector<Shape> shapes = {{1, cb, 1}, {7, 2 * cb, 3}, {33, cb, 5}, {150, 512, 2}};
  if (bs == 1) {
    shapes.push_back({5, 1, 4});
    shapes.push_back({9, 37, 2});
  }
  uint32_t seed = 1;
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (const auto& s : shapes) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(::testing::Message()
                     << isa_name(isa) << " " << tensor::dtype_name(t) << " rows " << s.rows
                     << " cols " << s.cols << " m " << s.m << " bias " << with_bias);
        const Weight w = make_weight(t, s.rows, s.cols, ++seed);
        std::vector<float> x;
        for (int64_t i = 0; i < s.m; ++i) {
          const auto row = activation_like(static_cast<size_t>(s.cols), ++seed);
          x.insert(x.end(), row.begin(), row.end());
        }
        const auto bias = random_vec(static_cast<size_t>(s.rows), ++seed);
        const float* b = with_bias ? bias.data() : nullptr;
        std::vector<float> y(static_cast<size_t>(s.m * s.rows), NAN);
        matmul(w.view, x.data(), s.m, y.data(), b);
        std::vector<double> mag;
        const auto expected = oracle_matmul(w.view, x, s.m, b, &mag);
        for (size_t i = 0; i < y.size(); ++i) {
          // f32 rounding of scales, products and the accumulation.
          ASSERT_NEAR(y[i], expected[i], 4e-6 * mag[i] + 1e-30) << "output " << i;
        }
      }
    }
  }
}

// matmul(w, x, m) on every ISA, from w's bytes and from its packed copy where the ISA makes one,
// equals the scalar reference's output bit for bit (what: the case, for the failure message).
void expect_every_isa_equals_scalar(const WeightView& w, const float* x, int64_t m,
                                    const float* bias, const std::string& what) {
  std::vector<float> want(static_cast<size_t>(m * w.rows));
  {
    IsaGuard guard(Isa::kScalar);
    matmul(w, x, m, want.data(), bias);
  }
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    const Packed packed = packed_of(w);
    for (const WeightView* view : {&w, &packed.view}) {
      if (view == &packed.view && view->packed == nullptr) continue;
      std::vector<float> got(want.size(), NAN);
      matmul(*view, x, m, got.data(), bias);
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
            << isa_name(isa) << " " << what << " packed " << (view->packed != nullptr) << " output "
            << i << ": " << got[i] << " vs " << want[i];
      }
    }
  }
}

// Every ISA equals the scalar reference bit for bit, on odd shapes.
TEST_P(MatmulTest, EveryIsaEqualsReferenceBitForBit) {
  const DType t = GetParam();
  const int64_t bs = tensor::dtype_info(t).block_size;
  const int64_t unit = bs == 1 ? 8 : std::max<int64_t>(bs, 256);
  std::vector<Shape> shapes;
  for (int64_t m = 1; m <= 17; ++m)
    shapes.push_back({m % 2 ? 1 + 3 * m : 8 * m, unit * (1 + m % 3), m});
  shapes.push_back({1, unit, 1});
  shapes.push_back({37, 5 * unit, 4});
  shapes.push_back({43, unit, 70});  // two token chunks (64 + 6), row tiles 8 + 8 / 8 + 8 / 8 + 3
  // The amx GEMM (32 tokens or more): an odd number of blocks (its last block alone), two
  // 16-token chunks and a rest of one, 5 tile pairs (a group of 4 and one more) and 3 rows past
  // them.
  if (bs == 32) shapes.push_back({83, 7 * 32, 33});
  // The amx GEMM's overlapping last chunk: 32 tokens, then tokens 27..42 (11 past the first 32).
  shapes.push_back({37, 2 * unit, 43});
  // Decode and the few-token batches streamed like it (1-7 tokens) over enough rows that each
  // thread reads 4 tile pairs side by side (the stream loop's constant-count instance), then
  // fewer, then single tiles and a short one.
  for (int64_t m = 1; m <= 7; ++m)
    shapes.push_back({301, unit, m});
  if (bs == 1) {
    shapes.push_back({11, 3, 2});
    shapes.push_back({9, 37, 5});
    shapes.push_back({19, 1, 17});
    // The avx512 float GEMM over 70 k-steps and a tail of 3: 4-row tiles (5 and one of 1 row),
    // 12-token tiles (12 + 1), two token chunks (64 + 6).
    shapes.push_back({21, 563, 13});
    shapes.push_back({21, 563, 70});
  }
  uint32_t seed = 100;
  for (const auto& s : shapes) {
    const Weight w = make_weight(t, s.rows, s.cols, ++seed);
    std::vector<float> x;
    for (int64_t i = 0; i < s.m; ++i) {
      const auto row = activation_like(static_cast<size_t>(s.cols), ++seed);
      x.insert(x.end(), row.begin(), row.end());
    }
    const auto bias = random_vec(static_cast<size_t>(s.rows), ++seed);
    for (bool with_bias : {false, true}) {
      ASSERT_NO_FATAL_FAILURE(expect_every_isa_equals_scalar(
          w.view, x.data(), s.m, with_bias ? bias.data() : nullptr,
          (::testing::Message() << tensor::dtype_name(t) << " rows " << s.rows << " cols " << s.cols
                                << " m " << s.m << " bias " << with_bias)
              .GetString()));
    }
  }
}

TEST_P(MatmulTest, BatchedEqualsAloneBitForBit) {
  const DType t = GetParam();
  const int64_t bs = tensor::dtype_info(t).block_size;
  const int64_t cols = bs == 1 ? 300 : 2 * 256;
  const int64_t rows = 130;
  const Weight w = make_weight(t, rows, cols, 11);
  const auto bias = random_vec(static_cast<size_t>(rows), 13);
  // Multi-threaded, several token tiles; 5: streamed like a decode; 137: two GEMM token chunks
  // (128), 8-token groups in both, and a tail of one.
  for (const int64_t m : {5, 9, 137})
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      SCOPED_TRACE(::testing::Message() << "m " << m);
      const auto x = random_vec(static_cast<size_t>(m * cols), 12);
      std::vector<float> batched(static_cast<size_t>(m * rows));
      matmul(w.view, x.data(), m, batched.data(), bias.data());
      const Packed packed = packed_of(w.view);
      for (int64_t i = 0; i < m; ++i) {
        std::vector<float> alone(static_cast<size_t>(rows));
        matmul(w.view, x.data() + i * cols, 1, alone.data(), bias.data());
        EXPECT_EQ(std::memcmp(alone.data(), batched.data() + i * rows, sizeof(float) * rows), 0)
            << isa_name(isa) << " row " << i;
        if (packed.view.packed == nullptr) continue;
        matmul(packed.view, x.data() + i * cols, 1, alone.data(), bias.data());
        EXPECT_EQ(std::memcmp(alone.data(), batched.data() + i * rows, sizeof(float) * rows), 0)
            << isa_name(isa) << " packed row " << i;
      }
      if (packed.view.packed != nullptr) {
        std::vector<float> packed_batched(batched.size());
        matmul(packed.view, x.data(), m, packed_batched.data(), bias.data());
        EXPECT_EQ(std::memcmp(packed_batched.data(), batched.data(), sizeof(float) * rows * m), 0)
            << isa_name(isa) << " packed batch";
      }
      // And a second run gives the same bits (no thread-count dependence).
      std::vector<float> again(batched.size());
      const int saved = num_threads();
      set_num_threads(1);
      matmul(w.view, x.data(), m, again.data(), bias.data());
      set_num_threads(saved);
      EXPECT_EQ(std::memcmp(again.data(), batched.data(), sizeof(float) * again.size()), 0)
          << isa_name(isa);
    }
}

// Weights and activations at the quantisers' extremes (most levels at the top, every sub-block's
// scale the largest, every activation +-127): the integer sums reach their largest magnitudes, so
// a kernel whose int16 or float partial sums lose bits there (exact only below 2^15 or 2^24)
// differs from the reference. Every ISA, packed or not, decode and GEMM token counts.
TEST_P(MatmulTest, ExtremeSumsEqualReferenceBitForBit) {
  const DType t = GetParam();
  const int64_t rows = 16, cols = 512;
  const size_t row_bytes = *tensor::row_size_bytes(t, static_cast<uint64_t>(cols));
  struct Pattern {
    float lo, hi, x;  // each 32 columns' first weight lo, the rest hi; every activation x
  };
  for (const Pattern& p :
       {Pattern{0, 1, 1}, Pattern{0, 1, -1}, Pattern{-1, 1, 1}, Pattern{1, -1, -1}}) {
    std::vector<float> f(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c)
      f[static_cast<size_t>(c)] = c % 32 == 0 ? p.lo : p.hi;
    std::vector<uint8_t> bytes(row_bytes * rows);
    for (int64_t r = 0; r < rows; ++r)
      quantize_row(t, f.data(), bytes.data() + r * row_bytes, cols);
    const WeightView w{t, rows, cols, row_bytes, bytes.data()};
    for (const int64_t m : {1, 8, 9, 33}) {
      const std::vector<float> x(static_cast<size_t>(m * cols), p.x);
      ASSERT_NO_FATAL_FAILURE(expect_every_isa_equals_scalar(
          w, x.data(), m, nullptr,
          (::testing::Message() << "pattern " << p.lo << "/" << p.hi << "/" << p.x << " m " << m)
              .GetString()));
    }
  }
}

// The packed path is really taken where it exists: x86 ISAs pack every quantised type (tiles of 8
// rows, the last one padded), the reference packs nothing; float types stay as stored.
TEST(PackedWeightTest, X86PacksEveryQuantisedTypeAndTheReferenceNothing) {
  const Weight q4_0 = make_weight(DType::kQ4_0, 13, 512, 5);
  const Weight q4_k = make_weight(DType::kQ4_K, 13, 512, 6);
  const Weight q6_k = make_weight(DType::kQ6_K, 13, 512, 7);
  const Weight q8 = make_weight(DType::kQ8_0, 13, 512, 8);
  const Weight q5_k = make_weight(DType::kQ5_K, 13, 512, 9);
  const Weight q4_1 = make_weight(DType::kQ4_1, 13, 512, 10);
  const Weight q5_0 = make_weight(DType::kQ5_0, 13, 512, 11);
  const Weight q5_1 = make_weight(DType::kQ5_1, 13, 512, 12);
  const Weight q2_k = make_weight(DType::kQ2_K, 13, 512, 13);
  const Weight q3_k = make_weight(DType::kQ3_K, 13, 512, 14);
  const Weight f16 = make_weight(DType::kF16, 13, 512, 15);
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    const bool x86 = isa == Isa::kAvx2 || isa == Isa::kAvx512 || isa == Isa::kAmx;
    EXPECT_EQ(pack_weight(q4_0.view).size(), x86 ? 2u * 16u * 144u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q4_k.view).size(), x86 ? 2u * 2u * 1152u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q6_k.view).size(), x86 ? 2u * 2u * 1680u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q8.view).size(), x86 ? 2u * 16u * 272u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q5_k.view).size(), x86 ? 2u * 2u * 1408u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q4_1.view).size(), x86 ? 2u * 16u * 160u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q5_0.view).size(), x86 ? 2u * 16u * 176u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q5_1.view).size(), x86 ? 2u * 16u * 192u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q2_k.view).size(), x86 ? 2u * 2u * 672u : 0u) << isa_name(isa);
    EXPECT_EQ(pack_weight(q3_k.view).size(), x86 ? 2u * 2u * 912u : 0u) << isa_name(isa);
    EXPECT_TRUE(pack_weight(f16.view).empty()) << isa_name(isa);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulTest, ::testing::ValuesIn(kAllTypes),
                         [](const auto& param_info) {
                           return std::string(tensor::dtype_name(param_info.param));
                         });

// A group of matmuls sharing one input (mixed vec-dot types, some with bias) gives the same bits
// as separate calls, on every ISA and batch size.
TEST(MatmulGroupTest, EqualsSeparateCalls) {
  const int64_t cols = 512;
  const Weight a = make_weight(DType::kQ4_K, 70, cols, 31);
  const Weight b = make_weight(DType::kQ6_K, 9, cols, 32);
  const Weight c = make_weight(DType::kQ8_0, 33, cols, 33);
  const Weight d = make_weight(DType::kF16, 20, cols, 34);
  const auto bias = random_vec(70, 35);
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (int64_t m : {1, 3, 6}) {
      const auto x = random_vec(static_cast<size_t>(m * cols), 36);
      std::vector<float> ya(70 * m), yb(9 * m), yc(33 * m), yd(20 * m);
      const MatmulJob jobs[] = {{&a.view, ya.data(), bias.data()},
                                {&b.view, yb.data(), nullptr},
                                {&c.view, yc.data(), bias.data()},
                                {&d.view, yd.data(), nullptr}};
      matmul_group(jobs, x.data(), m);
      for (const MatmulJob& j : jobs) {
        std::vector<float> alone(static_cast<size_t>(j.w->rows * m));
        matmul(*j.w, x.data(), m, alone.data(), j.bias);
        EXPECT_EQ(std::memcmp(alone.data(), j.y, alone.size() * sizeof(float)), 0)
            << isa_name(isa) << " " << tensor::dtype_name(j.w->dtype) << " m " << m;
      }
    }
  }
}

// Grouped matmuls (MoE experts): inputs gathered by index or contiguous, several weights per
// input (mixed vec-dot types), empty inputs, m from 1 to 19 (decode and batch kernels): every
// job's output is the bits of one matmul over its gathered rows, on every ISA, packed or not,
// with 1 to 3 threads, called alone or from a team.
TEST(MatmulGroupedTest, EqualsOneMatmulPerJob) {
  const int64_t cols = 256, x_rows = 23;
  const Weight gate = make_weight(DType::kQ4_K, 70, cols, 41);
  const Weight up = make_weight(DType::kQ6_K, 70, cols, 42);
  const Weight e1 = make_weight(DType::kQ8_0, 130, cols, 43);
  const Weight e2 = make_weight(DType::kF16, 17, cols, 44);
  const Weight e3 = make_weight(DType::kQ4_0, 64, cols, 45);
  const auto x = random_vec(static_cast<size_t>(x_rows * cols), 46);
  // Row lists: repeats allowed across inputs (a token goes to several experts).
  const std::vector<int32_t> rows_a = {3, 0, 22, 7,  8,  15, 2,  9,  11, 1,
                                       4, 5, 6,  10, 12, 13, 14, 16, 17};
  const std::vector<int32_t> rows_b = {21, 4};
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    const Packed pg = packed_of(gate.view), pu = packed_of(up.view), p1 = packed_of(e1.view),
                 p2 = packed_of(e2.view), p3 = packed_of(e3.view);
    for (bool packed : {false, true}) {
      const WeightView& g = packed ? pg.view : gate.view;
      const WeightView& u = packed ? pu.view : up.view;
      const WeightView& w1 = packed ? p1.view : e1.view;
      const WeightView& w2 = packed ? p2.view : e2.view;
      const WeightView& w3 = packed ? p3.view : e3.view;
      for (int64_t m : {1, 2, 3, 5, 19}) {
        const std::vector<GroupedInput> inputs = {
            {x.data(), rows_a.data(), m},  // gate and up share it
            {x.data(), nullptr, 0},        // an expert with no tokens
            {x.data() + 2 * cols, nullptr, std::min<int64_t>(m + 1, 20)},
            {x.data(), rows_b.data(), 2},
        };
        std::vector<std::vector<float>> y(5);
        const std::vector<std::pair<const WeightView*, int32_t>> spec = {
            {&g, 0}, {&u, 0}, {&w1, 2}, {&w2, 1}, {&w3, 3}};
        for (size_t j = 0; j < spec.size(); ++j) {
          const int64_t mj = inputs[static_cast<size_t>(spec[j].second)].m;
          y[j].assign(static_cast<size_t>(std::max<int64_t>(mj, 1) * spec[j].first->rows), NAN);
        }
        std::vector<GroupedJob> jobs;
        for (size_t j = 0; j < spec.size(); ++j)
          jobs.push_back({spec[j].first, spec[j].second, y[j].data()});
        // The expected bits: one matmul per job over its rows gathered.
        std::vector<std::vector<float>> expected(spec.size());
        for (size_t j = 0; j < spec.size(); ++j) {
          const GroupedInput& in = inputs[static_cast<size_t>(spec[j].second)];
          std::vector<float> gathered(static_cast<size_t>(in.m * cols));
          for (int64_t i = 0; i < in.m; ++i) {
            const int64_t r = in.rows != nullptr ? in.rows[i] : i;
            std::copy_n(in.x + r * cols, cols, gathered.begin() + i * cols);
          }
          expected[j].assign(y[j].size(), NAN);
          matmul(*spec[j].first, gathered.data(), in.m, expected[j].data());
        }
        for (int threads : {1, 2, 3}) {
          ThreadsGuard tg(threads);
          for (bool team : {false, true}) {
            for (auto& v : y)
              std::fill(v.begin(), v.end(), NAN);
            if (team) {
              run_in_team([&] { matmul_grouped(inputs, jobs); });
            } else {
              matmul_grouped(inputs, jobs);
            }
            for (size_t j = 0; j < spec.size(); ++j) {
              EXPECT_EQ(std::memcmp(y[j].data(), expected[j].data(), y[j].size() * sizeof(float)),
                        0)
                  << isa_name(isa) << " packed " << packed << " m " << m << " job " << j
                  << " threads " << threads << " team " << team;
            }
          }
        }
      }
    }
  }
}

// Grouped GPTQ/AWQ experts (weight_view.h): weights with input orders (each its own, or shared)
// and zero terms (Q4_0 and Q8_0, two group sizes, a row slice whose term stride exceeds its rows),
// beside plain ones, over gathered, contiguous and empty inputs: every job's output is the bits of
// one matmul over its gathered rows, and that is ggml's semantics on the input gathered by the
// order plus the zero term times the group sums, in double (within 1e-5 of the terms' size), on
// every ISA, packed or not, m from 1 to 40 (decode, GEMM and AMX kernels), 1 to 3 threads, alone
// or from a team.
TEST(MatmulGroupedTest, InputOrdersAndZeroTermsEqualOneMatmulPerJob) {
  const int64_t cols = 256, x_rows = 23;
  const auto x = random_vec(static_cast<size_t>(x_rows * cols), 61);
  std::vector<int32_t> order_a(cols), order_b(cols), rows_a(40);
  for (int64_t k = 0; k < cols; ++k) {
    order_a[static_cast<size_t>(k)] = static_cast<int32_t>((k * 37 + 11) % cols);
    order_b[static_cast<size_t>(k)] = static_cast<int32_t>((k * 101 + 7) % cols);
  }
  for (size_t i = 0; i < rows_a.size(); ++i)
    rows_a[i] = static_cast<int32_t>((i * 7 + 3) % x_rows);  // every row, some twice
  const std::vector<int32_t> rows_b = {21, 4};
  // An expert's weight: the plain matrix and, optionally, its order and zero term.
  struct Expert {
    Weight weight;
    const int32_t* order;
    std::vector<float> term;  // [groups, term_rows] or empty
    int64_t group, term_rows, first_row, rows;
  };
  const auto expert = [&](DType t, int64_t rows, const int32_t* order, int64_t group, uint32_t seed,
                          int64_t first_row = 0, int64_t all_rows = 0) {
    if (all_rows == 0) all_rows = rows;
    Expert e{make_weight(t, all_rows, cols, seed), order, {}, group, all_rows, first_row, rows};
    if (group > 0) e.term = random_vec(static_cast<size_t>(cols / group * all_rows), seed + 100);
    return e;
  };
  const std::vector<Expert> experts = [&] {
    std::vector<Expert> v;
    v.push_back(expert(DType::kQ4_0, 70, order_a.data(), 64, 62));  // gate: order a, term
    v.push_back(expert(DType::kQ4_0, 70, order_a.data(), 64, 63));  // up: shares gate's rows
    v.push_back(expert(DType::kQ4_0, 40, order_b.data(), 64, 64));  // its own order, same input
    v.push_back(expert(DType::kQ8_0, 130, nullptr, 32, 65));        // 8-bit, term, no order
    v.push_back(expert(DType::kQ4_0, 40, order_b.data(), 0, 66, 8, 64));  // rows 8..47 of 64
    v.push_back(expert(DType::kQ4_K, 70, nullptr, 0, 67));                // a plain K-quant expert
    v.push_back(expert(DType::kQ4_0, 24, order_a.data(), 32, 68));        // an input with no rows
    v.push_back(expert(DType::kQ4_0, 33, order_a.data(), 0, 69));         // gate's order, no term
    v.push_back(expert(DType::kQ4_0, 17, nullptr, 64, 70));               // gate's term, no order
    v.push_back(expert(DType::kQ4_0, 24, nullptr, 0, 71));                // plain, on gate's input
    return v;
  }();
  // Job j: experts[j] over inputs[job_input[j]].
  const std::vector<int32_t> job_input = {0, 0, 0, 2, 3, 2, 1, 0, 0, 0};
  // The view of expert e (packed as the active ISA packs it, or not), order and term attached.
  const auto view_of = [&](const Expert& e, std::vector<uint8_t>* packed) {
    WeightView v = row_slice(e.weight.view, e.first_row, e.rows);
    if (packed != nullptr) {
      *packed = pack_weight(v);
      v.packed = packed->empty() ? nullptr : packed->data();
    }
    v.input_order = e.order;
    if (!e.term.empty()) {
      v.zero_term = e.term.data() + e.first_row;
      v.zero_group = e.group;
      v.zero_stride = e.term_rows;
    }
    return v;
  };
  for (int64_t m : {1, 2, 3, 5, 19, 40}) {
    const std::vector<GroupedInput> inputs = {
        {x.data(), rows_a.data(), m},
        {x.data(), nullptr, 0},
        {x.data() + 2 * cols, nullptr, std::min<int64_t>(m + 1, 20)},
        {x.data(), rows_b.data(), 2},
    };
    // Each job's input rows, gathered; ggml's semantics on them gathered by the weight's order,
    // plus the zero term, in double.
    std::vector<std::vector<float>> gathered(experts.size());
    std::vector<std::vector<double>> want(experts.size()), mag(experts.size());
    for (size_t j = 0; j < experts.size(); ++j) {
      const Expert& e = experts[j];
      const GroupedInput& in = inputs[static_cast<size_t>(job_input[j])];
      std::vector<float>& g = gathered[j];
      g.assign(static_cast<size_t>(in.m * cols), 0);
      for (int64_t i = 0; i < in.m; ++i) {
        const int64_t r = in.rows != nullptr ? in.rows[i] : i;
        std::copy_n(in.x + r * cols, cols, g.begin() + i * cols);
      }
      std::vector<float> stored(g.size());  // the input in the weight's stored column order
      for (size_t c = 0; c < g.size(); ++c) {
        const size_t k = c % static_cast<size_t>(cols);
        stored[c] = e.order != nullptr ? g[c - k + static_cast<size_t>(e.order[k])] : g[c];
      }
      const WeightView plain = row_slice(e.weight.view, e.first_row, e.rows);
      want[j] = oracle_matmul(plain, stored, in.m, nullptr, &mag[j]);
      for (int64_t i = 0; i < in.m && !e.term.empty(); ++i) {
        for (int64_t r = 0; r < e.rows; ++r) {
          for (int64_t grp = 0; grp < cols / e.group; ++grp) {
            double sum = 0;
            for (int64_t k = grp * e.group; k < (grp + 1) * e.group; ++k)
              sum += stored[static_cast<size_t>(i * cols + k)];
            const double z = e.term[static_cast<size_t>(grp * e.term_rows + e.first_row + r)];
            want[j][static_cast<size_t>(i * e.rows + r)] += z * sum;
            mag[j][static_cast<size_t>(i * e.rows + r)] += std::fabs(z * sum);
          }
        }
      }
    }
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      for (bool packed : {false, true}) {
        std::vector<std::vector<uint8_t>> packs(experts.size());
        std::vector<WeightView> views;
        for (size_t j = 0; j < experts.size(); ++j)
          views.push_back(view_of(experts[j], packed ? &packs[j] : nullptr));
        const std::string where =
            std::string(isa_name(isa)) + (packed ? " packed" : "") + " m " + std::to_string(m);
        std::vector<std::vector<float>> y(experts.size()), expected(experts.size());
        std::vector<GroupedJob> jobs;
        for (size_t j = 0; j < experts.size(); ++j) {
          const int64_t mj = inputs[static_cast<size_t>(job_input[j])].m;
          y[j].assign(static_cast<size_t>(std::max<int64_t>(mj, 1) * views[j].rows), NAN);
          expected[j].assign(y[j].size(), NAN);
          jobs.push_back({&views[j], job_input[j], y[j].data()});
          matmul(views[j], gathered[j].data(), mj, expected[j].data());
          for (size_t i = 0; i < want[j].size(); ++i) {
            ASSERT_NEAR(expected[j][i], want[j][i], 1e-5 * mag[j][i] + 1e-6)
                << where << " job " << j << " entry " << i;
          }
        }
        for (int threads : {1, 2, 3}) {
          ThreadsGuard tg(threads);
          for (bool team : {false, true}) {
            for (auto& v : y)
              std::fill(v.begin(), v.end(), NAN);
            if (team) {
              run_in_team([&] { matmul_grouped(inputs, jobs); });
            } else {
              matmul_grouped(inputs, jobs);
            }
            for (size_t j = 0; j < experts.size(); ++j) {
              EXPECT_EQ(std::memcmp(y[j].data(), expected[j].data(), y[j].size() * sizeof(float)),
                        0)
                  << where << " job " << j << " threads " << threads << " team " << team;
            }
          }
        }
      }
    }
  }
}

// A weight with an input order (act-order GPTQ repacked by loader/hf) multiplies x gathered by
// that order: the same bits as the plain weight times the gathered x, in a group with weights of
// other orders and none, packed or not, at decode and GEMM (and AMX) batch sizes, on every ISA.
TEST(MatmulGroupTest, InputOrderGathersTheInput) {
  const int64_t cols = 256;
  const Weight a = make_weight(DType::kQ4_0, 40, cols, 41);
  const Weight b = make_weight(DType::kQ5_0, 24, cols, 42);
  const Weight c = make_weight(DType::kQ4_0, 17, cols, 43);
  const Weight d = make_weight(DType::kQ8_0, 16, cols, 44);
  std::vector<int32_t> order_a(cols), order_b(cols);
  for (int64_t k = 0; k < cols; ++k) {
    order_a[static_cast<size_t>(k)] = static_cast<int32_t>((k * 37 + 11) % cols);  // 37 odd
    order_b[static_cast<size_t>(k)] = static_cast<int32_t>(cols - 1 - k);
  }
  const auto gather = [&](const std::vector<float>& x, int64_t m, const std::vector<int32_t>& o) {
    std::vector<float> g(x.size());
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t k = 0; k < cols; ++k)
        g[static_cast<size_t>(r * cols + k)] = x[static_cast<size_t>(r * cols + o[k])];
    }
    return g;
  };
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (bool packed : {false, true}) {
      WeightView va = a.view, vb = b.view, vc = c.view, vd = d.view;
      std::vector<uint8_t> pa, pb, pc, pd;
      if (packed) {
        pa = pack_weight(va), pb = pack_weight(vb), pc = pack_weight(vc), pd = pack_weight(vd);
        va.packed = pa.empty() ? nullptr : pa.data();
        vb.packed = pb.empty() ? nullptr : pb.data();
        vc.packed = pc.empty() ? nullptr : pc.data();
        vd.packed = pd.empty() ? nullptr : pd.data();
      }
      const WeightView plain_a = va, plain_c = vc;
      va.input_order = order_a.data();
      vb.input_order = order_b.data();
      vc.input_order = order_a.data();  // the same order as a: one converted input
      for (int64_t m : {1, 3, 40}) {
        const auto x = random_vec(static_cast<size_t>(m * cols), 45);
        std::vector<float> ya(40 * m), yb(24 * m), yc(17 * m), yd(16 * m);
        const MatmulJob jobs[] = {{&va, ya.data(), nullptr},
                                  {&vb, yb.data(), nullptr},
                                  {&vc, yc.data(), nullptr},
                                  {&vd, yd.data(), nullptr}};
        matmul_group(jobs, x.data(), m);
        const auto ga = gather(x, m, order_a), gb = gather(x, m, order_b);
        WeightView plain_b = vb;
        plain_b.input_order = nullptr;
        std::vector<float> ea(ya.size()), eb(yb.size()), ec(yc.size()), ed(yd.size());
        matmul(plain_a, ga.data(), m, ea.data());
        matmul(plain_b, gb.data(), m, eb.data());
        matmul(plain_c, ga.data(), m, ec.data());
        matmul(vd, x.data(), m, ed.data());
        const std::string where =
            std::string(isa_name(isa)) + (packed ? " packed" : "") + " m " + std::to_string(m);
        EXPECT_EQ(std::memcmp(ya.data(), ea.data(), ya.size() * sizeof(float)), 0) << where;
        EXPECT_EQ(std::memcmp(yb.data(), eb.data(), yb.size() * sizeof(float)), 0) << where;
        EXPECT_EQ(std::memcmp(yc.data(), ec.data(), yc.size() * sizeof(float)), 0) << where;
        EXPECT_EQ(std::memcmp(yd.data(), ed.data(), yd.size() * sizeof(float)), 0) << where;
        // And the gather is not a no-op: the plain weight on the raw x differs.
        std::vector<float> raw(ya.size());
        matmul(plain_a, x.data(), m, raw.data());
        EXPECT_NE(std::memcmp(raw.data(), ya.data(), ya.size() * sizeof(float)), 0) << where;
      }
    }
  }
}

// MoE's combine: each row the weighted sum of its chosen source rows (index -1 skipped), against
// the sum written out in double.
TEST(WeightedRowSumTest, WeightedSourceRowsInOrder) {
  const int64_t src_rows = 9, dim = 37, rows = 6, k = 3;
  const auto src = random_vec(static_cast<size_t>(src_rows * dim), 51);
  const auto weights = random_vec(static_cast<size_t>(rows * k), 52);
  const std::vector<int32_t> index = {0, 4, 8, 1, -1, 2, -1, -1, -1, 3, 3, 5, 6, 7, 0, 8, 2, -1};
  for (int threads : {1, 2, 3}) {
    ThreadsGuard tg(threads);
    std::vector<float> out(static_cast<size_t>(rows * dim), NAN);
    weighted_row_sum(src.data(), index.data(), weights.data(), rows, k, dim, out.data());
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t d = 0; d < dim; ++d) {
        double want = 0, mag = 0;
        for (int64_t j = 0; j < k; ++j) {
          const int32_t i = index[static_cast<size_t>(r * k + j)];
          if (i < 0) continue;
          const double term = static_cast<double>(weights[static_cast<size_t>(r * k + j)]) *
                              src[static_cast<size_t>(i * dim + d)];
          want += term;
          mag += std::fabs(term);
        }
        EXPECT_NEAR(out[static_cast<size_t>(r * dim + d)], want, 1e-6 * mag + 1e-30)
            << "row " << r << " col " << d;
      }
    }
  }
}

// A weight with a zero term (asymmetric GPTQ/AWQ repacked by loader/hf) adds, per output row r
// and token, sum_g term(g, r) * (the sum of the token's (gathered) inputs over group g): checked
// against a double-precision sum on the plain weight's bits, on a row slice (stride > rows), with
// and without an input order, and batched equals alone bit for bit, on every ISA.
TEST(MatmulGroupTest, ZeroTermAddsGroupSums) {
  const int64_t cols = 256, rows = 24, group = 64, groups = cols / group;
  const Weight a = make_weight(DType::kQ4_0, 40, cols, 51);
  const auto term = random_vec(static_cast<size_t>(groups * 40), 52, 0.05f);  // [groups, 40]
  std::vector<int32_t> order(cols);
  for (int64_t k = 0; k < cols; ++k)
    order[static_cast<size_t>(k)] = static_cast<int32_t>((k * 101 + 7) % cols);
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    for (bool ordered : {false, true}) {
      WeightView full = a.view;
      full.zero_term = term.data();
      full.zero_group = group;
      full.zero_stride = 40;
      full.input_order = ordered ? order.data() : nullptr;
      const WeightView w = row_slice(full, 9, rows);  // rows 9..32 of the 40
      WeightView plain = w;
      plain.zero_term = nullptr;
      plain.input_order = nullptr;
      const int64_t m = 40;
      const auto x = random_vec(static_cast<size_t>(m * cols), 53);
      std::vector<float> gathered(x.size());
      for (int64_t t = 0; t < m; ++t) {
        for (int64_t k = 0; k < cols; ++k)
          gathered[static_cast<size_t>(t * cols + k)] =
              x[static_cast<size_t>(t * cols + (ordered ? order[static_cast<size_t>(k)] : k))];
      }
      std::vector<float> y(static_cast<size_t>(m * rows)), base(y.size());
      matmul(w, x.data(), m, y.data());
      matmul(plain, gathered.data(), m, base.data());
      const std::string where = std::string(isa_name(isa)) + (ordered ? " ordered" : "");
      for (int64_t t = 0; t < m; ++t) {
        for (int64_t r = 0; r < rows; ++r) {
          double add = 0, mag = 0;
          for (int64_t g = 0; g < groups; ++g) {
            double sum = 0;
            for (int64_t k = g * group; k < (g + 1) * group; ++k)
              sum += gathered[static_cast<size_t>(t * cols + k)];
            const double z = term[static_cast<size_t>(g * 40 + 9 + r)];
            add += z * sum;
            mag += std::fabs(z * sum);
          }
          const size_t i = static_cast<size_t>(t * rows + r);
          EXPECT_NEAR(y[i], base[i] + add, 1e-5 * (mag + std::fabs(base[i])) + 1e-6)
              << where << " token " << t << " row " << r;
        }
      }
      for (int64_t t : {0, 17, 39}) {  // batched == alone
        std::vector<float> alone(static_cast<size_t>(rows));
        matmul(w, x.data() + t * cols, 1, alone.data());
        EXPECT_EQ(std::memcmp(alone.data(), y.data() + t * rows, alone.size() * sizeof(float)), 0)
            << where << " token " << t;
      }
    }
  }
}

TEST(MatmulTest, MisalignedRows) {
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_K}) {
    const int64_t cols = t == DType::kF32 ? 5 : 256;
    const Weight w = make_weight(t, 9, cols, 3, /*misalign=*/2);
    const auto x = random_vec(static_cast<size_t>(cols), 4);
    std::vector<double> mag;
    const auto expected = oracle_matmul(w.view, x, 1, nullptr, &mag);
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      std::vector<float> y(9);
      matmul(w.view, x.data(), 1, y.data());
      for (size_t i = 0; i < y.size(); ++i)
        EXPECT_NEAR(y[i], expected[i], 4e-6 * mag[i]) << isa_name(isa);
    }
  }
}

TEST(MatmulTest, EmptyBatchWritesNothing) {
  const Weight w = make_weight(DType::kQ8_0, 3, 32, 5);
  float sentinel = 42;
  matmul(w.view, nullptr, 0, &sentinel);
  EXPECT_EQ(sentinel, 42);
}

TEST(GetRowsTest, CopiesDequantisedRows) {
  for (DType t : {DType::kF32, DType::kF16, DType::kQ4_K, DType::kQ8_0}) {
    const Weight table = make_weight(t, 10, 256, 21);
    const std::vector<int32_t> ids = {9, 0, 3, 3};
    std::vector<float> out(ids.size() * 256), expected(256);
    get_rows(table.view, ids.data(), static_cast<int64_t>(ids.size()), out.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      dequantize_row(t, table.view.row(ids[i]), expected.data(), 256);
      EXPECT_EQ(std::memcmp(out.data() + i * 256, expected.data(), 256 * sizeof(float)), 0)
          << tensor::dtype_name(t) << " id " << ids[i];
    }
  }
}

}  // namespace
}  // namespace pagoda::kernels
