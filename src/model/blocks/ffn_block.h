// Feed-forward blocks: a dense gated FFN (SwiGLU or GeGLU), and a mixture of such experts (softmax
// router over all experts, top-k; weights renormalised over the chosen k as Mixtral, or not as
// Qwen-MoE, then scaled), optionally with a shared expert on every token (its output gated by a
// sigmoid, as Qwen-MoE, or not). DeepSeek-V3's router: sigmoid probabilities, experts chosen by
// probability + a per-expert bias within the best groups, weighted by the probabilities.
#pragma once

#include <vector>

#include <optional>

#include "kernels/weight_view.h"
#include "model/blocks/scratch.h"
#include "model/lora.h"
#include "model/model_config.h"

namespace pagoda::model {

struct FfnWeights {
  kernels::WeightView gate, up;  // [ffn, hidden]
  kernels::WeightView down;      // [hidden, ffn]
  FfnActivation activation = FfnActivation::kSilu;
};

struct MoeWeights {
  kernels::WeightView router;       // [num_experts, hidden]
  std::vector<FfnWeights> experts;  // num_experts
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

// Reserve the scratch ffn_block and moe_block use for up to num_tokens tokens.
void reserve_ffn_scratch(const FfnWeights& w, int64_t num_tokens, Scratch& scratch);
void reserve_moe_scratch(const MoeWeights& w, int64_t num_tokens, Scratch& scratch);

// out[T, hidden] = down(act(gate(h)) * up(h)), act = w.activation (silu or tanh-form gelu).
// `lora` adds the rows' adapters to the gate, up and down projections.
void ffn_block(const FfnWeights& w, const float* h, int64_t num_tokens, float* out,
               Scratch& scratch, const LoraLayer& lora = {});

// out[T, hidden] = Σ_k weight_k · expert_k(h) over each token's top-k experts (+ the shared
// expert, gated). Inside a kernels
// team every thread computes the routing (the same on each) from the router's output.
void moe_block(const MoeWeights& w, const float* h, int64_t num_tokens, float* out,
               Scratch& scratch);

}  // namespace pagoda::model
