// moe_block runs the routed experts grouped (every active expert's rows in one grouped matmul).
// The oracle is the token-by-token definition: for each token alone, its router probabilities,
// its top k experts (ties to the lower id) chosen and weighted here, each expert's FFN on that one
// row (ffn_block), the weighted outputs summed, plus the gated shared expert. Random routing over
// 64 experts top 8 (most experts get 0 tokens at small batches), every token on the same experts
// (a zero router: all probabilities tie), one expert taking all tokens (k = 1), a prompt longer
// than one grouped pass, a GeGLU variant; on 1 to 3 threads, alone and on a kernels team. Expert
// parallelism: two halves of the experts on two "ranks" add up to the whole.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kernels/team.h"
#include "model/blocks/moe_block.h"

namespace pagoda::model {
namespace {

using tensor::DType;

struct OwnedWeight {
  std::vector<uint8_t> bytes;
  kernels::WeightView view;
};

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, scale);
  std::vector<float> v(n);
  for (float& x : v)
    x = g(rng);
  return v;
}

// [rows, cols] of dtype with N(0, scale²) values (quantised when dtype is).
void make_weight(OwnedWeight& w, DType dtype, int64_t rows, int64_t cols, uint32_t seed,
                 float scale) {
  const auto f = random_values(static_cast<size_t>(rows * cols), seed, scale);
  const size_t row_bytes = *tensor::row_size_bytes(dtype, static_cast<uint64_t>(cols));
  w.bytes.resize(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    kernels::quantize_row(dtype, f.data() + r * cols, w.bytes.data() + r * row_bytes, cols);
  w.view = kernels::WeightView{dtype, rows, cols, row_bytes, w.bytes.data()};
}

struct TestMoe {
  std::vector<OwnedWeight> owned;  // stable: reserved before the views are taken
  MoeWeights w;
};

// hidden 128, expert ffn 64, Q8_0 experts, an F32 router (zero: every probability ties).
void make_moe(TestMoe& m, int32_t num_experts, int32_t k, bool shared, bool zero_router,
              FfnActivation act, uint32_t seed) {
  const int64_t hidden = 128, ffn = 64, shared_ffn = 96;
  m.owned.clear();
  m.owned.reserve(static_cast<size_t>(3 * num_experts + 5));
  auto add = [&](DType t, int64_t rows, int64_t cols, float scale) -> kernels::WeightView {
    m.owned.emplace_back();
    make_weight(m.owned.back(), t, rows, cols, seed++, scale);
    return m.owned.back().view;
  };
  m.w = MoeWeights{};
  m.w.router = add(DType::kF32, num_experts, hidden, zero_router ? 0.0f : 0.3f);
  for (int32_t e = 0; e < num_experts; ++e) {
    FfnWeights f;
    f.gate = add(DType::kQ8_0, ffn, hidden, 0.1f);
    f.up = add(DType::kQ8_0, ffn, hidden, 0.1f);
    f.down = add(DType::kQ8_0, hidden, ffn, 0.1f);
    f.activation = act;
    m.w.experts.push_back(f);
  }
  m.w.num_used = k;
  m.w.norm_weights = false;
  m.w.weights_scale = 1.5f;
  if (shared) {
    FfnWeights f;
    f.gate = add(DType::kQ8_0, shared_ffn, hidden, 0.1f);
    f.up = add(DType::kQ8_0, shared_ffn, hidden, 0.1f);
    f.down = add(DType::kQ8_0, hidden, shared_ffn, 0.1f);
    f.activation = act;
    m.w.shared = f;
    m.w.shared_gate = add(DType::kF32, 1, hidden, 0.2f);
  }
}

// The token-by-token definition (see the file comment).
std::vector<float> token_by_token(const MoeWeights& w, const std::vector<float>& h, int64_t T) {
  const int64_t hidden = w.router.cols, E = w.router.rows, k = w.num_used;
  std::vector<float> out(static_cast<size_t>(T * hidden), 0.0f);
  Scratch scratch;
  for (const FfnWeights& e : w.experts)
    reserve_ffn_scratch(e, 1, scratch);
  if (w.shared) reserve_ffn_scratch(*w.shared, 1, scratch);
  std::vector<float> probs(static_cast<size_t>(E)), y(static_cast<size_t>(hidden));
  for (int64_t t = 0; t < T; ++t) {
    const float* ht = h.data() + t * hidden;
    kernels::matmul(w.router, ht, 1, probs.data());
    kernels::softmax(probs.data(), 1, E);
    std::vector<int32_t> ids(static_cast<size_t>(E));
    std::iota(ids.begin(), ids.end(), 0);
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
      return probs[static_cast<size_t>(a)] > probs[static_cast<size_t>(b)];
    });
    ids.resize(static_cast<size_t>(k));
    float sum = 0;
    for (int32_t e : ids)
      sum += probs[static_cast<size_t>(e)];
    std::sort(ids.begin(), ids.end());  // summed in ascending expert id
    float* dst = out.data() + t * hidden;
    for (int32_t e : ids) {
      const FfnWeights& x = w.experts[static_cast<size_t>(e)];
      if (x.down.rows == 0) continue;  // another rank's
      const float p = probs[static_cast<size_t>(e)];
      const float wt = (w.norm_weights ? p / sum : p) * w.weights_scale;
      ffn_block(x, ht, 1, y.data(), scratch);
      for (int64_t d = 0; d < hidden; ++d)
        dst[d] += wt * y[static_cast<size_t>(d)];
    }
    if (w.shared) {
      float g = 0;
      kernels::matmul(w.shared_gate, ht, 1, &g);
      ffn_block(*w.shared, ht, 1, y.data(), scratch);
      const float s = 1.0f / (1.0f + std::exp(-g));
      for (int64_t d = 0; d < hidden; ++d)
        dst[d] += s * y[static_cast<size_t>(d)];
    }
  }
  return out;
}

std::vector<float> grouped(const MoeWeights& w, const std::vector<float>& h, int64_t T, bool team) {
  std::vector<float> out(static_cast<size_t>(T * w.router.cols), NAN);
  Scratch scratch;
  reserve_moe_scratch(w, T, scratch);
  if (team) {
    kernels::run_in_team([&] { moe_block(w, h.data(), T, out.data(), scratch); });
  } else {
    moe_block(w, h.data(), T, out.data(), scratch);
  }
  return out;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  float scale = 0;
  for (float v : want)
    scale = std::max(scale, std::fabs(v));
  ASSERT_GT(scale, 0.0f) << what;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << what << " element " << i;
    worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[i])));
  }
  EXPECT_LE(worst, 1e-5 * scale) << what;
}

class ThreadCount {
 public:
  explicit ThreadCount(int n) : saved_(kernels::num_threads()) { kernels::set_num_threads(n); }
  ~ThreadCount() { kernels::set_num_threads(saved_); }

 private:
  int saved_;
};

void check_grouped_equals_token_by_token(const MoeWeights& w, int64_t T, uint32_t seed,
                                         const std::string& what) {
  const auto h = random_values(static_cast<size_t>(T * w.router.cols), seed, 1.0f);
  const auto want = token_by_token(w, h, T);
  for (int threads : {1, 2, 3}) {
    ThreadCount tc(threads);
    for (bool team : {false, true}) {
      expect_close(grouped(w, h, T, team), want,
                   what + " T " + std::to_string(T) + " threads " + std::to_string(threads) +
                       (team ? " team" : ""));
    }
  }
}

TEST(MoeBlockTest, GroupedEqualsTokenByTokenOnRandomRouting) {
  TestMoe m;
  make_moe(m, 64, 8, /*shared=*/true, /*zero_router=*/false, FfnActivation::kSilu, 1);
  for (int64_t T : {1, 3, 16, 41})
    check_grouped_equals_token_by_token(m.w, T, 100 + static_cast<uint32_t>(T), "random");
}

TEST(MoeBlockTest, GroupedEqualsTokenByTokenWhenEveryTokenPicksTheSameExperts) {
  TestMoe m;
  // A zero router: every probability ties and each token takes experts 0..k-1 (lower id first),
  // so those experts get every token and the others none.
  make_moe(m, 64, 8, /*shared=*/false, /*zero_router=*/true, FfnActivation::kSilu, 2);
  check_grouped_equals_token_by_token(m.w, 20, 7, "all tokens on experts 0-7");
  // k = 1: one expert takes the whole batch.
  m.w.num_used = 1;
  m.w.norm_weights = true;
  check_grouped_equals_token_by_token(m.w, 33, 8, "all tokens on expert 0");
}

TEST(MoeBlockTest, GroupedEqualsTokenByTokenOverSeveralPassesAndGeglu) {
  TestMoe m;
  make_moe(m, 16, 8, /*shared=*/true, /*zero_router=*/false, FfnActivation::kGeluTanh, 3);
  const int64_t T = max_group_tokens(8) + 37;  // two grouped passes
  const auto h = random_values(static_cast<size_t>(T * m.w.router.cols), 9, 1.0f);
  const auto want = token_by_token(m.w, h, T);
  ThreadCount tc(2);
  expect_close(grouped(m.w, h, T, true), want, "two passes");
}

TEST(MoeBlockTest, ExpertParallelHalvesAddUpToTheWhole) {
  TestMoe m;
  make_moe(m, 64, 6, /*shared=*/false, /*zero_router=*/false, FfnActivation::kSilu, 4);
  const int64_t T = 12;
  const auto h = random_values(static_cast<size_t>(T * m.w.router.cols), 10, 1.0f);
  const auto whole = grouped(m.w, h, T, false);
  std::vector<float> sum(whole.size(), 0.0f);
  for (int rank = 0; rank < 2; ++rank) {
    MoeWeights part = m.w;
    for (size_t e = 0; e < part.experts.size(); ++e) {
      if (static_cast<int>(e / 32) != rank) part.experts[e] = FfnWeights{};  // another rank's
    }
    const auto got = grouped(part, h, T, true);
    expect_close(got, token_by_token(part, h, T), "rank " + std::to_string(rank));
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] += got[i];
  }
  expect_close(sum, whole, "ranks summed");
}

// The grouping itself: every (token, choice) lands in its expert's range once, tokens ascending
// within an expert; combine_row points back at it.
TEST(MoeBlockTest, GroupByExpertPartitionsTheChoices) {
  TestMoe m;
  make_moe(m, 64, 8, false, false, FfnActivation::kSilu, 5);
  const int64_t T = 30, E = 64, k = 8, t0 = 5, t1 = 27;
  auto probs = random_values(static_cast<size_t>(T * E), 11, 1.0f);
  kernels::softmax(probs.data(), T, E);
  MoeRouting r;
  route_tokens(m.w, probs.data(), T, r);
  group_by_expert(m.w, t0, t1, r);
  ASSERT_EQ(r.expert_begin.size(), static_cast<size_t>(E + 1));
  EXPECT_EQ(r.expert_begin.back(), (t1 - t0) * k);
  for (int64_t e = 0; e < E; ++e) {
    const int32_t b = r.expert_begin[static_cast<size_t>(e)];
    const int32_t n = r.expert_begin[static_cast<size_t>(e + 1)];
    for (int32_t i = b; i < n; ++i) {
      const int32_t t = r.row_token[static_cast<size_t>(i)];
      ASSERT_TRUE(t >= t0 && t < t1);
      if (i > b) {
        EXPECT_LT(r.row_token[static_cast<size_t>(i - 1)], t);
      }
      const auto* c = r.chosen.data() + t * k;
      EXPECT_NE(std::find(c, c + k, static_cast<int32_t>(e)), c + k);
    }
  }
  for (int64_t t = t0; t < t1; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t row = r.combine_row[static_cast<size_t>((t - t0) * k + j)];
      ASSERT_GE(row, 0);
      EXPECT_EQ(r.row_token[static_cast<size_t>(row)], t);
    }
  }
}

}  // namespace
}  // namespace pagoda::model
