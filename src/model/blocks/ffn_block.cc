#include "model/blocks/ffn_block.h"

#include "kernels/ops.h"

namespace pagoda::model {
namespace {
enum Slot { kGate = 20, kUp };
}

void reserve_ffn_scratch(const FfnWeights& w, int64_t T, Scratch& scratch) {
  scratch.reserve(kGate, static_cast<size_t>(T * w.gate.rows));
  scratch.reserve(kUp, static_cast<size_t>(T * w.gate.rows));
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

}  // namespace pagoda::model
