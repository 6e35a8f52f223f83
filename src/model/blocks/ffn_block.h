// Feed-forward blocks: dense SwiGLU, and a mixture of SwiGLU experts (Mixtral layout: softmax
// router over all experts, top-k, weights renormalised over the chosen k).
#pragma once

#include <vector>

#include "kernels/weight_view.h"
#include "model/blocks/scratch.h"

namespace pagoda::model {

struct FfnWeights {
  kernels::WeightView gate, up;  // [ffn, hidden]
  kernels::WeightView down;      // [hidden, ffn]
};

struct MoeWeights {
  kernels::WeightView router;       // [num_experts, hidden]
  std::vector<FfnWeights> experts;  // num_experts
  int32_t num_used = 0;
};

// Reserve the scratch ffn_block and moe_block use for up to num_tokens tokens.
void reserve_ffn_scratch(const FfnWeights& w, int64_t num_tokens, Scratch& scratch);
void reserve_moe_scratch(const MoeWeights& w, int64_t num_tokens, Scratch& scratch);

// out[T, hidden] = down(silu(gate(h)) * up(h)).
void ffn_block(const FfnWeights& w, const float* h, int64_t num_tokens, float* out,
               Scratch& scratch);

// out[T, hidden] = Σ_k weight_k · expert_k(h) over each token's top-k experts. Inside a kernels
// team every thread computes the routing (the same on each) from the router's output.
void moe_block(const MoeWeights& w, const float* h, int64_t num_tokens, float* out,
               Scratch& scratch);

}  // namespace pagoda::model
