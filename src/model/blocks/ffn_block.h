// The dense gated feed-forward block (SwiGLU or GeGLU); mixtures of such experts are
// moe_block.h's.
#pragma once

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

// Reserve the scratch ffn_block uses for up to num_tokens tokens.
void reserve_ffn_scratch(const FfnWeights& w, int64_t num_tokens, Scratch& scratch);

// out[T, hidden] = down(act(gate(h)) * up(h)), act = w.activation (silu or tanh-form gelu).
// `lora` adds the rows' adapters to the gate, up and down projections.
void ffn_block(const FfnWeights& w, const float* h, int64_t num_tokens, float* out,
               Scratch& scratch, const LoraLayer& lora = {});

}  // namespace pagoda::model
