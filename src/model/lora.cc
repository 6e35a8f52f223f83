#include "model/lora.h"

#include <algorithm>
#include <cstring>

#include "kernels/ops.h"
#include "kernels/team.h"

namespace pagoda::model {
namespace {
enum Slot { kLoraX = 40, kLoraMid, kLoraDelta };

struct TargetNames {
  LoraTarget target;
  std::string_view peft;
  std::string_view gguf;
};
constexpr TargetNames kTargets[kNumLoraTargets] = {
    {LoraTarget::kQ, "q_proj", "attn_q"},         {LoraTarget::kK, "k_proj", "attn_k"},
    {LoraTarget::kV, "v_proj", "attn_v"},         {LoraTarget::kO, "o_proj", "attn_output"},
    {LoraTarget::kGate, "gate_proj", "ffn_gate"}, {LoraTarget::kUp, "up_proj", "ffn_up"},
    {LoraTarget::kDown, "down_proj", "ffn_down"},
};

kernels::WeightView f32_view(const std::vector<float>& m, int64_t rows, int64_t cols) {
  kernels::WeightView w;
  w.dtype = tensor::DType::kF32;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = static_cast<size_t>(cols) * sizeof(float);
  w.data = reinterpret_cast<const uint8_t*>(m.data());
  return w;
}
}  // namespace

std::string_view lora_target_name(LoraTarget target) {
  return kTargets[static_cast<int>(target)].peft;
}

bool lora_target_from_peft(std::string_view module, LoraTarget& target) {
  for (const TargetNames& t : kTargets) {
    if (t.peft == module) {
      target = t.target;
      return true;
    }
  }
  return false;
}

bool lora_target_from_gguf(std::string_view tensor_base, LoraTarget& target) {
  for (const TargetNames& t : kTargets) {
    if (t.gguf == tensor_base) {
      target = t.target;
      return true;
    }
  }
  return false;
}

std::array<int64_t, 2> lora_target_shape(const ModelConfig& c, LoraTarget target) {
  const int64_t hidden = c.hidden_dim;
  switch (target) {
    case LoraTarget::kQ:
      return {c.q_dim(), hidden};
    case LoraTarget::kK:
    case LoraTarget::kV:
      return {c.kv_dim(), hidden};
    case LoraTarget::kO:
      return {hidden, c.q_dim()};
    case LoraTarget::kGate:
    case LoraTarget::kUp:
      return {c.ffn_dim, hidden};
    case LoraTarget::kDown:
      return {hidden, c.ffn_dim};
  }
  return {0, 0};
}

Status validate_lora_adapter(const ModelConfig& c, const LoraAdapter& adapter, int32_t max_rank) {
  if (adapter.layers.size() != static_cast<size_t>(c.num_layers)) {
    return invalid_argument("adapter has {} layers, the model {}", adapter.layers.size(),
                            c.num_layers);
  }
  for (int32_t l = 0; l < c.num_layers; ++l) {
    for (int t = 0; t < kNumLoraTargets; ++t) {
      const LoraProjection& p = adapter.layers[static_cast<size_t>(l)][static_cast<size_t>(t)];
      if (p.rank == 0) continue;
      const auto target = static_cast<LoraTarget>(t);
      const std::string_view name = lora_target_name(target);
      if (p.rank < 0 || p.rank > max_rank) {
        return invalid_argument("layer {} {}: rank {} is over the maximum LoRA rank {}", l, name,
                                p.rank, max_rank);
      }
      const bool attention = t <= static_cast<int>(LoraTarget::kO);
      if (attention && c.mla()) {
        return unimplemented("layer {} {}: LoRA on multi-head latent attention is not supported", l,
                             name);
      }
      if (!attention && c.num_experts > 0) {
        return unimplemented(
            "layer {} {}: LoRA on the FFN of a mixture-of-experts model is not supported", l, name);
      }
      const auto [out, in] = lora_target_shape(c, target);
      if (p.a.size() != static_cast<size_t>(p.rank * in) ||
          p.b.size() != static_cast<size_t>(out * p.rank)) {
        return invalid_argument(
            "layer {} {}: lora A/B hold {}/{} values, the model needs [{}, {}]"
            " and [{}, {}]",
            l, name, p.a.size(), p.b.size(), p.rank, in, out, p.rank);
      }
    }
  }
  return Status();
}

void LoraBatch::build(const ForwardBatch& batch) {
  groups_.clear();
  max_rows_ = 0;
  max_rank_ = 0;
  for (const SequenceSlice& seq : batch.sequences) {
    if (seq.lora == nullptr) continue;
    auto it = std::find_if(groups_.begin(), groups_.end(),
                           [&](const Group& g) { return g.adapter == seq.lora; });
    if (it == groups_.end()) {
      groups_.push_back(Group{seq.lora, {}});
      it = groups_.end() - 1;
    }
    for (int32_t t = 0; t < seq.num_tokens; ++t)
      it->rows.push_back(seq.token_begin + t);
  }
  for (const Group& g : groups_) {
    max_rows_ = std::max<int64_t>(max_rows_, static_cast<int64_t>(g.rows.size()));
    max_rank_ = std::max<int64_t>(max_rank_, g.adapter->rank);
  }
}

void LoraBatch::reserve_scratch(int64_t max_dim, Scratch& scratch) const {
  if (groups_.empty()) return;
  scratch.reserve(kLoraX, static_cast<size_t>(max_rows_ * max_dim));
  scratch.reserve(kLoraMid, static_cast<size_t>(max_rows_ * max_rank_));
  scratch.reserve(kLoraDelta, static_cast<size_t>(max_rows_ * max_dim));
}

void LoraBatch::add(int32_t layer, LoraTarget target, const float* x, int64_t in, float* y,
                    int64_t out, Scratch& scratch) const {
  for (const Group& g : groups_) {
    const LoraProjection& p =
        g.adapter->layers[static_cast<size_t>(layer)][static_cast<size_t>(target)];
    if (p.rank == 0) continue;
    const int64_t n = static_cast<int64_t>(g.rows.size());
    float* gx = scratch.get(kLoraX, static_cast<size_t>(n * in));
    kernels::team_first([&] {
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(gx + i * in, x + g.rows[static_cast<size_t>(i)] * in,
                    static_cast<size_t>(in) * sizeof(float));
      }
    });
    float* mid = scratch.get(kLoraMid, static_cast<size_t>(n * p.rank));
    kernels::matmul(f32_view(p.a, p.rank, in), gx, n, mid);
    float* delta = scratch.get(kLoraDelta, static_cast<size_t>(n * out));
    kernels::matmul(f32_view(p.b, out, p.rank), mid, n, delta);
    kernels::team_first([&] {
      for (int64_t i = 0; i < n; ++i) {
        float* dst = y + g.rows[static_cast<size_t>(i)] * out;
        const float* src = delta + i * out;
        for (int64_t d = 0; d < out; ++d)
          dst[d] += src[d];
      }
    });
  }
}

}  // namespace pagoda::model
