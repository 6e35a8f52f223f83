#include "model/blocks/ffn_block.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/ops.h"
#include "kernels/team.h"

namespace pagoda::model {
namespace {
enum Slot { kGate = 20, kUp, kRouter, kGather, kExpertOut, kShared, kSharedGate };
}

void reserve_ffn_scratch(const FfnWeights& w, int64_t T, Scratch& scratch) {
  scratch.reserve(kGate, static_cast<size_t>(T * w.gate.rows));
  scratch.reserve(kUp, static_cast<size_t>(T * w.gate.rows));
}

void reserve_moe_scratch(const MoeWeights& w, int64_t T, Scratch& scratch) {
  const auto hidden = static_cast<size_t>(T * w.router.cols);
  scratch.reserve(kRouter, static_cast<size_t>(T * w.router.rows));
  scratch.reserve(kGather, hidden);  // an expert gets each token at most once
  scratch.reserve(kExpertOut, hidden);
  for (const FfnWeights& e : w.experts)
    reserve_ffn_scratch(e, T, scratch);
  if (w.shared) {
    reserve_ffn_scratch(*w.shared, T, scratch);
    scratch.reserve(kShared, hidden);
    scratch.reserve(kSharedGate, static_cast<size_t>(T));
  }
}

void ffn_block(const FfnWeights& w, const float* h, int64_t T, float* out, Scratch& scratch,
               const LoraLayer& lora) {
  const int64_t ffn = w.gate.rows;
  float* gate = scratch.get(kGate, static_cast<size_t>(T * ffn));
  float* up = scratch.get(kUp, static_cast<size_t>(T * ffn));
  // Gate and up in one parallel region (h converted once).
  const kernels::MatmulJob gate_up[] = {{&w.gate, gate, nullptr}, {&w.up, up, nullptr}};
  kernels::matmul_group(gate_up, h, T);
  const int64_t hidden = w.gate.cols;
  const LoraBatch::Output gate_up_lora[] = {{LoraTarget::kGate, gate, ffn},
                                            {LoraTarget::kUp, up, ffn}};
  lora.add(gate_up_lora, h, hidden, scratch);
  if (w.activation == FfnActivation::kGeluTanh) {
    kernels::gelu_tanh_mul(gate, up, T * ffn, gate);
  } else {
    kernels::silu_mul(gate, up, T * ffn, gate);
  }
  kernels::matmul(w.down, gate, T, out);
  lora.add(LoraTarget::kDown, gate, ffn, out, hidden, scratch);
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

  // Per token: its top-k experts and their weights (renormalised or not, then scaled).
  std::vector<int32_t> chosen(static_cast<size_t>(T * k));
  std::vector<float> weights(static_cast<size_t>(T * k));
  std::vector<int32_t> order(static_cast<size_t>(num_experts));
  std::vector<float> score(static_cast<size_t>(num_experts));
  const int64_t groups = w.num_groups, per_group = num_experts / groups;
  std::vector<int32_t> group_order(static_cast<size_t>(groups));
  std::vector<float> group_score(static_cast<size_t>(groups));
  for (int64_t t = 0; t < T; ++t) {
    const float* p = router + t * num_experts;
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
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)];
    });
    float sum = 0;
    for (int64_t j = 0; j < k; ++j)
      sum += p[order[static_cast<size_t>(j)]];
    for (int64_t j = 0; j < k; ++j) {
      const float pj = p[order[static_cast<size_t>(j)]];
      chosen[static_cast<size_t>(t * k + j)] = order[static_cast<size_t>(j)];
      weights[static_cast<size_t>(t * k + j)] = (w.norm_weights ? pj / sum : pj) * w.weights_scale;
    }
  }

  // Expert by expert: gather its tokens, run the dense FFN, scatter-add weighted. Each token
  // accumulates its experts in ascending expert id, whatever else is in the batch.
  kernels::team_first(
      [&] { std::memset(out, 0, static_cast<size_t>(T * hidden) * sizeof(float)); });
  std::vector<int64_t> rows;
  std::vector<float> row_weights;
  for (int64_t e = 0; e < num_experts; ++e) {
    rows.clear();
    row_weights.clear();
    for (int64_t t = 0; t < T; ++t) {
      for (int64_t j = 0; j < k; ++j) {
        if (chosen[static_cast<size_t>(t * k + j)] == e) {
          rows.push_back(t);
          row_weights.push_back(weights[static_cast<size_t>(t * k + j)]);
        }
      }
    }
    // (An expert another rank holds, under expert parallelism: its share comes in the
    // all-reduce after this block.)
    if (rows.empty() || w.experts[static_cast<size_t>(e)].down.rows == 0) continue;
    const int64_t n = static_cast<int64_t>(rows.size());
    float* gathered = scratch.get(kGather, static_cast<size_t>(n * hidden));
    kernels::team_first([&] {
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(gathered + i * hidden, h + rows[static_cast<size_t>(i)] * hidden,
                    static_cast<size_t>(hidden) * sizeof(float));
      }
    });
    float* expert_out = scratch.get(kExpertOut, static_cast<size_t>(n * hidden));
    ffn_block(w.experts[static_cast<size_t>(e)], gathered, n, expert_out, scratch);
    kernels::team_first([&] {
      for (int64_t i = 0; i < n; ++i) {
        float* dst = out + rows[static_cast<size_t>(i)] * hidden;
        const float* src = expert_out + i * hidden;
        const float wt = row_weights[static_cast<size_t>(i)];
        for (int64_t d = 0; d < hidden; ++d)
          dst[d] += wt * src[d];
      }
    });
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
