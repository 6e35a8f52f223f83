// rope against the textbook formula in double: pair i of a head at position p rotates by
// p · freq_scale · base^(-2i / rot_dims) / freq_factor[i]. Interleaved pairs (2i, 2i+1) and
// NEOX pairs (i, i + rot_dims/2); partial rotation leaves the tail untouched. The kernel follows
// ggml's float recurrence for the angles, so the tolerance grows with the position.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/ops.h"

namespace pagoda::kernels {
namespace {

std::vector<float> random_vec(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(n);
  for (auto& x : v)
    x = g(rng);
  return v;
}

// The textbook rotation, in double.
std::vector<double> naive_rope(const std::vector<float>& x, int64_t num_tokens, int64_t num_heads,
                               int64_t head_dim, const std::vector<int32_t>& pos,
                               const RopeParams& p) {
  std::vector<double> y(x.begin(), x.end());
  const int64_t half = p.rot_dims / 2;
  for (int64_t t = 0; t < num_tokens; ++t) {
    for (int64_t h = 0; h < num_heads; ++h) {
      const int64_t base = (t * num_heads + h) * head_dim;
      for (int64_t i = 0; i < half; ++i) {
        const double ff = p.freq_factors.empty() ? 1.0 : p.freq_factors[i];
        const double extrap = pos[t] * std::pow(double(p.theta_base), -2.0 * i / p.rot_dims) / ff;
        double theta = double(p.freq_scale) * extrap;
        double mscale = p.attn_factor;
        if (p.ext_factor != 0) {  // YaRN: ramp 1 below corr_dims[0], 0 above corr_dims[1]
          const double u = (double(i) - p.corr_dims[0]) /
                           std::max(0.001, double(p.corr_dims[1]) - p.corr_dims[0]);
          const double mix = (1 - std::clamp(u, 0.0, 1.0)) * p.ext_factor;
          theta = theta * (1 - mix) + extrap * mix;
          mscale *= 1 + 0.1 * std::log(1 / double(p.freq_scale));
        }
        const int64_t a = p.style == RopeStyle::kInterleaved ? 2 * i : i;
        const int64_t b = p.style == RopeStyle::kInterleaved ? 2 * i + 1 : i + half;
        const double x0 = x[base + a], x1 = x[base + b];
        y[base + a] = mscale * (x0 * std::cos(theta) - x1 * std::sin(theta));
        y[base + b] = mscale * (x0 * std::sin(theta) + x1 * std::cos(theta));
      }
    }
  }
  return y;
}

struct RopeCase {
  RopeStyle style;
  int64_t head_dim;
  int32_t rot_dims;
  float base;
  float freq_scale;
  bool freq_factors;
  bool yarn = false;  // ext_factor 1, attn_factor 0.9, an original context of 64
};

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesFormula) {
  const RopeCase c = GetParam();
  std::vector<float> factors;
  for (int i = 0; i < c.rot_dims / 2; ++i)
    factors.push_back(1.0f + 0.25f * float(i % 5));
  RopeParams p;
  p.style = c.style;
  p.rot_dims = c.rot_dims;
  p.theta_base = c.base;
  p.freq_scale = c.freq_scale;
  if (c.freq_factors) p.freq_factors = factors;
  if (c.yarn) {
    p.ext_factor = 1;
    p.attn_factor = 0.9f;
    p.corr_dims = rope_yarn_corr_dims(c.rot_dims, 64, c.base, 32, 1);
  }
  // Small positions are held tightly; large ones allow for the float angle recurrence.
  for (auto [positions, tol] : {std::pair{std::vector<int32_t>{0, 1, 2, 17, 63, 100}, 3e-5},
                                std::pair{std::vector<int32_t>{1000, 4095}, 1e-3}}) {
    const int64_t heads = 3, tokens = static_cast<int64_t>(positions.size());
    auto x = random_vec(static_cast<size_t>(tokens * heads * c.head_dim), 9);
    const auto expected = naive_rope(x, tokens, heads, c.head_dim, positions, p);
    rope(x.data(), tokens, heads, c.head_dim, positions.data(), p);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, std::fabs(x[i] - expected[i]));
    RecordProperty("worst_abs_error_to_pos_" + std::to_string(positions.back()),
                   std::to_string(worst));
    EXPECT_LT(worst, tol) << "positions up to " << positions.back();
    // The unrotated tail is bit-for-bit untouched.
    for (int64_t r = 0; r < tokens * heads; ++r) {
      for (int64_t d = c.rot_dims; d < c.head_dim; ++d) {
        ASSERT_EQ(x[r * c.head_dim + d], static_cast<float>(expected[r * c.head_dim + d]));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RopeTest,
    ::testing::Values(RopeCase{RopeStyle::kInterleaved, 64, 64, 10000, 1, false},
                      RopeCase{RopeStyle::kNeox, 64, 64, 1000000, 1, false},
                      RopeCase{RopeStyle::kNeox, 128, 64, 10000, 1, false},  // partial rotation
                      RopeCase{RopeStyle::kInterleaved, 96, 32, 500000, 0.25f, true},
                      RopeCase{RopeStyle::kNeox, 2, 2, 10000, 1, false},
                      RopeCase{RopeStyle::kInterleaved, 128, 128, 500000, 1, true},
                      RopeCase{RopeStyle::kNeox, 64, 64, 10000, 0.25f, false, true},
                      RopeCase{RopeStyle::kInterleaved, 96, 32, 500000, 0.125f, true, true}));

// ggml_rope_yarn_corr_dims, values computed independently (Python, double):
// d ln(n_ctx / (2 pi beta)) / (2 ln base), floored (beta_fast) / ceiled (beta_slow), clamped.
TEST(RopeTest, YarnCorrectionDims) {
  EXPECT_EQ(rope_yarn_corr_dims(128, 32768, 1e6f, 32, 1), (std::array<float, 2>{23, 40}));
  EXPECT_EQ(rope_yarn_corr_dims(16, 64, 1e4f, 32, 1), (std::array<float, 2>{0, 3}));
  EXPECT_EQ(rope_yarn_corr_dims(64, 4096, 1e4f, 32, 1), (std::array<float, 2>{10, 23}));
  // The end is clamped to rot_dims - 1 (ggml does not clamp the start from above).
  EXPECT_EQ(rope_yarn_corr_dims(16, 1 << 24, 100, 32, 1), (std::array<float, 2>{19, 15}));
}

TEST(RopeTest, PositionZeroIsIdentity) {
  RopeParams p;
  p.rot_dims = 16;
  auto x = random_vec(32, 1);
  const auto orig = x;
  const int32_t pos[2] = {0, 0};
  rope(x.data(), 2, 1, 16, pos, p);
  EXPECT_EQ(x, orig);
}

TEST(RopeTest, NeoxIsInterleavedOnPermutedPairs) {
  // NEOX pairs (i, i + d/2) are interleaved pairs (2i, 2i + 1) after a permutation; the two must
  // agree exactly on the permuted data.
  const int64_t d = 32;
  const std::vector<int32_t> pos = {5, 777};
  auto neox = random_vec(static_cast<size_t>(2 * d), 2);
  std::vector<float> inter(neox.size());
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t i = 0; i < d / 2; ++i) {
      inter[t * d + 2 * i] = neox[t * d + i];
      inter[t * d + 2 * i + 1] = neox[t * d + i + d / 2];
    }
  }
  RopeParams p;
  p.rot_dims = static_cast<int32_t>(d);
  p.style = RopeStyle::kNeox;
  rope(neox.data(), 2, 1, d, pos.data(), p);
  p.style = RopeStyle::kInterleaved;
  rope(inter.data(), 2, 1, d, pos.data(), p);
  for (int64_t t = 0; t < 2; ++t) {
    for (int64_t i = 0; i < d / 2; ++i) {
      EXPECT_EQ(inter[t * d + 2 * i], neox[t * d + i]);
      EXPECT_EQ(inter[t * d + 2 * i + 1], neox[t * d + i + d / 2]);
    }
  }
}

TEST(RopeTest, DotProductDependsOnRelativePosition) {
  // <rope(q, m), rope(k, n)> depends only on m - n.
  const int64_t d = 64;
  RopeParams p;
  p.rot_dims = d;
  p.style = RopeStyle::kNeox;
  const auto q0 = random_vec(d, 3), k0 = random_vec(d, 4);
  auto dot_at = [&](int32_t m, int32_t n) {
    auto q = q0, k = k0;
    rope(q.data(), 1, 1, d, &m, p);
    rope(k.data(), 1, 1, d, &n, p);
    double s = 0;
    for (int64_t i = 0; i < d; ++i)
      s += double(q[i]) * k[i];
    return s;
  };
  EXPECT_NEAR(dot_at(10, 3), dot_at(107, 100), 1e-3);
  EXPECT_NEAR(dot_at(3, 10), dot_at(50, 57), 1e-3);
}

}  // namespace
}  // namespace pagoda::kernels
