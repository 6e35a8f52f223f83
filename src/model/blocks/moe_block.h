// Mixture-of-experts FFN: a router over all experts picks each token's top k (softmax
// probabilities, weights renormalised over the chosen k as Mixtral or not as Qwen-MoE, then
// scaled; DeepSeek-V3: sigmoid probabilities, experts chosen by probability + a per-expert bias
// within the best groups, weighted by the probabilities), optionally plus a shared expert on every
// token (its output gated by a sigmoid, as Qwen-MoE, or not).
//
// The routed experts run grouped: the tokens are sorted by expert (counting sort, tokens in order
// within an expert), every active expert's gate and up projections over its own rows run as one
// kernels::matmul_grouped (the rows gathered as they are converted), the activation over all the
// grouped rows at once, the down projections as a second matmul_grouped, and each token's output
// is the weighted sum of its experts' rows in ascending expert id (kernels::weighted_row_sum). A
// layer is then a fixed handful of parallel steps whatever the number of experts, where running
// experts one after another costs a few barriers per active expert. The shared expert is a dense
// FFN over all rows.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/weight_view.h"
#include "model/blocks/ffn_block.h"
#include "model/blocks/scratch.h"

namespace pagoda::model {

struct MoeWeights {
  kernels::WeightView router;       // [num_experts, hidden]
  std::vector<FfnWeights> experts;  // num_experts; an empty one (down.rows 0) is another rank's
  int32_t num_used = 0;
  bool norm_weights = true;           // renormalise the chosen experts' probabilities to sum to 1
  float weights_scale = 1;            // then multiply them by this
  bool sigmoid = false;               // sigmoid probabilities instead of a softmax
  std::vector<float> selection_bias;  // empty, or [num_experts]: added for choosing only
  int32_t num_groups = 1;             // experts split into groups of num_experts / num_groups;
  int32_t groups_used = 1;            // only the groups_used best groups' experts may be chosen
  std::optional<FfnWeights> shared;   // run on every token and added
  kernels::WeightView shared_gate;  // [1, hidden]: shared output x sigmoid(gate . h); rows 0: none
};

// Where tokens [t0, t1) of a batch go.
struct MoeRouting {
  int64_t k = 0;
  std::vector<int32_t> chosen;  // [T, k] each token's experts, best first
  std::vector<float> weights;   // [T, k] their weights
  // The grouped rows of tokens [t0, t1) (group_by_expert): expert e's are [expert_begin[e],
  // expert_begin[e + 1]), each naming its token (row_token, absolute), tokens ascending.
  std::vector<int32_t> expert_begin;  // [num_experts + 1]
  std::vector<int32_t> row_token;     // [grouped rows]
  // Per token of [t0, t1) and j < k: the grouped row of its j-th expert in ascending expert id
  // (-1: an expert this rank does not hold) and that expert's weight.
  std::vector<int32_t> combine_row;   // [t1 - t0, k]
  std::vector<float> combine_weight;  // [t1 - t0, k]
};

// chosen and weights for T tokens from the router's probabilities probs[T, num_experts] (softmax
// or sigmoid already applied), as moe_block's header comment says.
void route_tokens(const MoeWeights& w, const float* probs, int64_t num_tokens, MoeRouting& r);
// The grouped rows of tokens [t0, t1) of r's routing; experts with no weights here (down.rows 0)
// get no rows.
void group_by_expert(const MoeWeights& w, int64_t t0, int64_t t1, MoeRouting& r);

// Tokens routed in one grouped pass at most: num_tokens x k grouped rows bound the scratch, so a
// long prompt runs in passes of max_group_tokens(k) tokens.
int64_t max_group_tokens(int64_t k);

// Reserve the scratch moe_block uses for up to num_tokens tokens.
void reserve_moe_scratch(const MoeWeights& w, int64_t num_tokens, Scratch& scratch);

// out[T, hidden] = Σ_k weight_k · expert_k(h) over each token's top-k experts (+ the shared
// expert, gated). Inside a kernels team every thread computes the routing (the same on each) from
// the router's output.
void moe_block(const MoeWeights& w, const float* h, int64_t num_tokens, float* out,
               Scratch& scratch);

}  // namespace pagoda::model
