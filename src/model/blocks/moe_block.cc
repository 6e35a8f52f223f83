#include "model/blocks/moe_block.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/check.h"
#include "kernels/ops.h"
#include "kernels/team.h"

namespace pagoda::model {
namespace {

enum Slot { kRouter = 50, kExpertGate, kExpertUp, kExpertOut, kShared, kSharedGate };

// Grouped rows in one pass at most (a multiple of every k up to 16 would waste nothing; 4096
// rows of a Qwen2-MoE-A2.7B layer's gate, up and out buffers are 80 MB).
constexpr int64_t kMaxGroupRows = 4096;

bool held(const FfnWeights& e) {
  return e.down.rows > 0;
}

}  // namespace

int64_t max_group_tokens(int64_t k) {
  return std::max<int64_t>(1, kMaxGroupRows / std::max<int64_t>(1, k));
}

void route_tokens(const MoeWeights& w, const float* probs, int64_t T, MoeRouting& r) {
  const int64_t num_experts = static_cast<int64_t>(w.experts.size());
  const int64_t k = w.num_used;
  PAGODA_CHECK(k >= 1 && k <= num_experts);
  r.k = k;
  r.chosen.resize(static_cast<size_t>(T * k));
  r.weights.resize(static_cast<size_t>(T * k));
  thread_local std::vector<int32_t> order;
  thread_local std::vector<float> score;
  thread_local std::vector<int32_t> group_order;
  thread_local std::vector<float> group_score;
  order.resize(static_cast<size_t>(num_experts));
  score.resize(static_cast<size_t>(num_experts));
  const int64_t groups = w.num_groups, per_group = num_experts / groups;
  group_order.resize(static_cast<size_t>(groups));
  group_score.resize(static_cast<size_t>(groups));
  for (int64_t t = 0; t < T; ++t) {
    const float* p = probs + t * num_experts;
    // The selection score: the probability, plus the bias when there is one.
    for (int64_t e = 0; e < num_experts; ++e) {
      score[static_cast<size_t>(e)] =
          p[e] + (w.selection_bias.empty() ? 0.0f : w.selection_bias[static_cast<size_t>(e)]);
    }
    if (groups > 1) {
      // A group's score is the sum of its two best; experts outside the best groups_used groups
      // cannot be chosen.
      for (int64_t g = 0; g < groups; ++g) {
        float best = -INFINITY, second = -INFINITY;
        for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e) {
          const float v = score[static_cast<size_t>(e)];
          if (v > best) {
            second = best;
            best = v;
          } else if (v > second) {
            second = v;
          }
        }
        group_score[static_cast<size_t>(g)] = best + second;
      }
      std::iota(group_order.begin(), group_order.end(), 0);
      std::stable_sort(group_order.begin(), group_order.end(), [&](int32_t a, int32_t b) {
        return group_score[static_cast<size_t>(a)] > group_score[static_cast<size_t>(b)];
      });
      for (int64_t j = w.groups_used; j < groups; ++j) {
        const int64_t g = group_order[static_cast<size_t>(j)];
        for (int64_t e = g * per_group; e < (g + 1) * per_group; ++e)
          score[static_cast<size_t>(e)] = -INFINITY;
      }
    }
    std::iota(order.begin(), order.end(), 0);
    // Only the best k need ordering (stable: equal scores keep the lower expert id first).
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int32_t a, int32_t b) {
      const float sa = score[static_cast<size_t>(a)], sb = score[static_cast<size_t>(b)];
      return sa > sb || (sa == sb && a < b);
    });
    float sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += p[order[static_cast<size_t>(j)]];
    for (int64_t j = 0; j < k; ++j) {
      const float pj = p[order[static_cast<size_t>(j)]];
      r.chosen[static_cast<size_t>(t * k + j)] = order[static_cast<size_t>(j)];
      r.weights[static_cast<size_t>(t * k + j)] =
          (w.norm_weights ? pj / sum : pj) * w.weights_scale;
    }
  }
}

void group_by_expert(const MoeWeights& w, int64_t t0, int64_t t1, MoeRouting& r) {
  const int64_t num_experts = static_cast<int64_t>(w.experts.size());
  const int64_t k = r.k, n = t1 - t0;
  PAGODA_CHECK(t0 >= 0 && t0 <= t1 && static_cast<size_t>(t1 * k) <= r.chosen.size());
  // Counting sort by expert: a token's rows go to its experts in token order.
  r.expert_begin.assign(static_cast<size_t>(num_experts + 1), 0);
  for (int64_t i = t0 * k; i < t1 * k; ++i) {
    const int32_t e = r.chosen[static_cast<size_t>(i)];
    if (held(w.experts[static_cast<size_t>(e)])) ++r.expert_begin[static_cast<size_t>(e) + 1];
  }
  for (int64_t e = 0; e < num_experts; ++e)
    r.expert_begin[static_cast<size_t>(e + 1)] += r.expert_begin[static_cast<size_t>(e)];
  r.row_token.resize(static_cast<size_t>(r.expert_begin.back()));
  r.combine_row.resize(static_cast<size_t>(n * k));
  r.combine_weight.resize(static_cast<size_t>(n * k));
  thread_local std::vector<int32_t> cursor, experts;
  cursor.assign(r.expert_begin.begin(), r.expert_begin.end() - 1);
  experts.resize(static_cast<size_t>(k));
  for (int64_t t = t0; t < t1; ++t) {
    // This token's experts in ascending id (k is small: insertion sort), each with its row.
    int32_t* rows = r.combine_row.data() + (t - t0) * k;
    float* weights = r.combine_weight.data() + (t - t0) * k;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = r.chosen[static_cast<size_t>(t * k + j)];
      const float wt = r.weights[static_cast<size_t>(t * k + j)];
      int64_t i = j;
      while (i > 0 && experts[static_cast<size_t>(i - 1)] > e) {
        experts[static_cast<size_t>(i)] = experts[static_cast<size_t>(i - 1)];
        weights[i] = weights[i - 1];
        --i;
      }
      experts[static_cast<size_t>(i)] = e;
      weights[i] = wt;
    }
    for (int64_t j = 0; j < k; ++j) {
      const auto e = static_cast<size_t>(experts[static_cast<size_t>(j)]);
      if (!held(w.experts[e])) {
        rows[j] = -1;
        continue;
      }
      const int32_t row = cursor[e]++;
      r.row_token[static_cast<size_t>(row)] = static_cast<int32_t>(t);
      rows[j] = row;
    }
  }
}

void reserve_moe_scratch(const MoeWeights& w, int64_t T, Scratch& scratch) {
  const int64_t hidden = w.router.cols, k = w.num_used;
  int64_t ffn = 0;
  for (const FfnWeights& e : w.experts)
    ffn = std::max(ffn, e.gate.rows);
  const int64_t rows = std::min(T, max_group_tokens(k)) * k;
  scratch.reserve(kRouter, static_cast<size_t>(T * w.router.rows));
  scratch.reserve(kExpertGate, static_cast<size_t>(rows * ffn));
  scratch.reserve(kExpertUp, static_cast<size_t>(rows * ffn));
  scratch.reserve(kExpertOut, static_cast<size_t>(rows * hidden));
  if (w.shared) {
    reserve_ffn_scratch(*w.shared, T, scratch);
    scratch.reserve(kShared, static_cast<size_t>(T * hidden));
    scratch.reserve(kSharedGate, static_cast<size_t>(T));
  }
}

void moe_block(const MoeWeights& w, const float* h, int64_t T, float* out, Scratch& scratch) {
  const int64_t num_experts = static_cast<int64_t>(w.experts.size());
  const int64_t hidden = w.router.cols;
  const int64_t k = w.num_used;
  float* router = scratch.get(kRouter, static_cast<size_t>(T * num_experts));
  kernels::matmul(w.router, h, T, router);
  if (w.sigmoid) {
    kernels::team_first([&] {
      for (int64_t i = 0; i < T * num_experts; ++i)
        router[i] = 1.0f / (1.0f + std::exp(-router[i]));
    });
  } else {
    kernels::softmax(router, T, num_experts);
  }
  kernels::team_sync();  // every thread of a team reads all of the router's output

  // Every thread routes and groups alike (thread_local: a team's threads each have their own).
  thread_local MoeRouting routing;
  thread_local std::vector<kernels::GroupedInput> inputs;
  thread_local std::vector<kernels::GroupedJob> jobs;
  route_tokens(w, router, T, routing);
  const int64_t pass = max_group_tokens(k);
  for (int64_t t0 = 0; t0 < T; t0 += pass) {
    const int64_t t1 = std::min(T, t0 + pass);
    group_by_expert(w, t0, t1, routing);
    const int64_t rows = routing.expert_begin.back();
    float* expert_out = scratch.get(kExpertOut, static_cast<size_t>(rows * hidden));
    if (rows > 0) {
      // Every held expert has the same width (one stacked tensor per projection).
      int64_t ffn = 0;
      for (const FfnWeights& e : w.experts)
        ffn = std::max(ffn, e.gate.rows);
      float* gate = scratch.get(kExpertGate, static_cast<size_t>(rows * ffn));
      float* up = scratch.get(kExpertUp, static_cast<size_t>(rows * ffn));
      // Gate and up of every active expert over its rows of h, in one grouped step.
      inputs.clear();
      jobs.clear();
      for (int64_t e = 0; e < num_experts; ++e) {
        const int32_t b = routing.expert_begin[static_cast<size_t>(e)];
        const int32_t n = routing.expert_begin[static_cast<size_t>(e + 1)] - b;
        if (n == 0) continue;
        const FfnWeights& x = w.experts[static_cast<size_t>(e)];
        PAGODA_CHECK(x.gate.rows == ffn && x.up.rows == ffn && x.down.cols == ffn);
        const auto input = static_cast<int32_t>(inputs.size());
        inputs.push_back({h, routing.row_token.data() + b, n});
        jobs.push_back({&x.gate, input, gate + int64_t{b} * ffn});
        jobs.push_back({&x.up, input, up + int64_t{b} * ffn});
      }
      kernels::matmul_grouped(inputs, jobs);
      if (w.experts[0].activation == FfnActivation::kGeluTanh) {
        kernels::gelu_tanh_mul(gate, up, rows * ffn, gate);
      } else {
        kernels::silu_mul(gate, up, rows * ffn, gate);
      }
      // Down: each expert's rows of the activations, contiguous.
      inputs.clear();
      jobs.clear();
      for (int64_t e = 0; e < num_experts; ++e) {
        const int32_t b = routing.expert_begin[static_cast<size_t>(e)];
        const int32_t n = routing.expert_begin[static_cast<size_t>(e + 1)] - b;
        if (n == 0) continue;
        const auto input = static_cast<int32_t>(inputs.size());
        inputs.push_back({gate + int64_t{b} * ffn, nullptr, n});
        jobs.push_back(
            {&w.experts[static_cast<size_t>(e)].down, input, expert_out + int64_t{b} * hidden});
      }
      kernels::matmul_grouped(inputs, jobs);
    }
    // Each token: its experts' rows, weighted, in ascending expert id.
    kernels::weighted_row_sum(expert_out, routing.combine_row.data(), routing.combine_weight.data(),
                              t1 - t0, k, hidden, out + t0 * hidden);
  }
  if (!w.shared) return;
  // The shared expert on every token, times sigmoid(gate . h) when gated.
  float* shared = scratch.get(kShared, static_cast<size_t>(T * hidden));
  ffn_block(*w.shared, h, T, shared, scratch);
  float* gate = nullptr;
  if (w.shared_gate.rows > 0) {
    gate = scratch.get(kSharedGate, static_cast<size_t>(T));
    kernels::matmul(w.shared_gate, h, T, gate);
  }
  kernels::team_first([&] {
    for (int64_t t = 0; t < T; ++t) {
      const float g = gate != nullptr ? 1.0f / (1.0f + std::exp(-gate[t])) : 1.0f;
      float* dst = out + t * hidden;
      const float* src = shared + t * hidden;
      for (int64_t d = 0; d < hidden; ++d)
        dst[d] += g * src[d];
    }
  });
}

}  // namespace pagoda::model
