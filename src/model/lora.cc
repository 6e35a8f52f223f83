#include "model/lora.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "base/check.h"
#include "kernels/ops.h"
#include "kernels/team.h"
#include "tensor/float16.h"

namespace pagoda::model {
namespace {
enum Slot { kLoraX = 40, kLoraMid, kLoraDelta };

[[maybe_unused]] constexpr size_t kMaxOutputs = LoraBatch::kMaxOutputs;
constexpr float kF16Max = 65504.0f;

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

size_t element_bytes(tensor::DType dtype) {
  return dtype == tensor::DType::kF32 ? sizeof(float) : sizeof(uint16_t);
}

kernels::WeightView matrix_view(const std::vector<uint8_t>& m, tensor::DType dtype, int64_t rows,
                                int64_t cols) {
  kernels::WeightView w;
  w.dtype = dtype;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = static_cast<size_t>(cols) * element_bytes(dtype);
  w.data = m.data();
  return w;
}

bool fits_f16(std::span<const float> v) {
  return std::all_of(v.begin(), v.end(), [](float x) { return std::fabs(x) <= kF16Max; });
}

std::vector<uint8_t> stored(std::span<const float> v, tensor::DType dtype) {
  std::vector<uint8_t> out(v.size() * element_bytes(dtype));
  if (dtype == tensor::DType::kF32) {
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t h = tensor::fp32_to_fp16(v[i]);
    std::memcpy(out.data() + 2 * i, &h, 2);
  }
  return out;
}
}  // namespace

void set_lora_projection(LoraProjection& p, int64_t rank, std::span<const float> a,
                         std::span<const float> b) {
  PAGODA_CHECK(rank > 0);
  static const bool force_f32 = [] {
    const char* env = std::getenv("PAGODA_LORA_F32");
    return env != nullptr && std::string_view(env) == "1";
  }();
  p.rank = rank;
  p.dtype = !force_f32 && fits_f16(a) && fits_f16(b) ? tensor::DType::kF16 : tensor::DType::kF32;
  p.a = stored(a, p.dtype);
  p.b = stored(b, p.dtype);
}

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
      if (p.dtype != tensor::DType::kF16 && p.dtype != tensor::DType::kF32) {
        return invalid_argument("layer {} {}: lora A/B are neither F16 nor F32", l, name);
      }
      const size_t elem = element_bytes(p.dtype);
      if (p.a.size() != static_cast<size_t>(p.rank * in) * elem ||
          p.b.size() != static_cast<size_t>(out * p.rank) * elem) {
        return invalid_argument(
            "layer {} {}: lora A/B hold {}/{} values, the model needs [{}, {}]"
            " and [{}, {}]",
            l, name, p.a.size() / elem, p.b.size() / elem, p.rank, in, out, p.rank);
      }
    }
  }
  return Status();
}

void LoraBatch::build(const ForwardBatch& batch) {
  num_groups_ = 0;
  max_rows_ = 0;
  max_rank_ = 0;
  for (const SequenceSlice& seq : batch.sequences) {
    if (seq.lora == nullptr || seq.num_tokens == 0) continue;
    const auto end = groups_.begin() + static_cast<std::ptrdiff_t>(num_groups_);
    auto it =
        std::find_if(groups_.begin(), end, [&](const Group& g) { return g.adapter == seq.lora; });
    if (it == end) {
      if (num_groups_ == groups_.size()) groups_.emplace_back();
      it = groups_.begin() + static_cast<std::ptrdiff_t>(num_groups_++);
      it->adapter = seq.lora;
      it->runs.clear();  // keeps its capacity: a steady state allocates nothing
      it->num_rows = 0;
    }
    if (!it->runs.empty() && it->runs.back().begin + it->runs.back().count == seq.token_begin) {
      it->runs.back().count += seq.num_tokens;
    } else {
      it->runs.push_back(Run{seq.token_begin, seq.num_tokens});
    }
    it->num_rows += seq.num_tokens;
  }
  for (size_t i = 0; i < num_groups_; ++i) {
    max_rows_ = std::max(max_rows_, groups_[i].num_rows);
    max_rank_ = std::max<int64_t>(max_rank_, groups_[i].adapter->rank);
  }
}

void LoraBatch::reserve_scratch(int64_t max_dim, Scratch& scratch) const {
  if (num_groups_ == 0) return;
  const auto n = static_cast<size_t>(max_rows_);
  scratch.reserve(kLoraX, n * static_cast<size_t>(max_dim));
  scratch.reserve(kLoraMid, kMaxOutputs * n * static_cast<size_t>(max_rank_));
  scratch.reserve(kLoraDelta, kMaxOutputs * n * static_cast<size_t>(max_dim));
}

void LoraBatch::add(int32_t layer, std::span<const Output> outputs, const float* x, int64_t in,
                    Scratch& scratch) const {
  PAGODA_CHECK(!outputs.empty() && outputs.size() <= kMaxOutputs);
  const auto rows_cap = static_cast<size_t>(max_rows_);
  for (size_t gi = 0; gi < num_groups_; ++gi) {
    const Group& g = groups_[gi];
    const auto& projections = g.adapter->layers[static_cast<size_t>(layer)];
    // The outputs this adapter adapts, with their A/B views.
    kernels::WeightView a_views[kMaxOutputs], b_views[kMaxOutputs];
    size_t which[kMaxOutputs];
    size_t k = 0;
    for (size_t o = 0; o < outputs.size(); ++o) {
      const LoraProjection& p = projections[static_cast<size_t>(outputs[o].target)];
      if (p.rank == 0) continue;
      a_views[k] = matrix_view(p.a, p.dtype, p.rank, in);
      b_views[k] = matrix_view(p.b, p.dtype, outputs[o].out, p.rank);
      which[k++] = o;
    }
    if (k == 0) continue;
    const int64_t n = g.num_rows;
    // The group's input rows: in place when they are one run, else gathered run by run.
    const float* gx = x + g.runs[0].begin * in;
    if (g.runs.size() > 1) {
      float* gathered = scratch.get(kLoraX, static_cast<size_t>(n * in));
      kernels::team_first([&] {
        int64_t row = 0;
        for (const Run& r : g.runs) {
          std::memcpy(gathered + row * in, x + r.begin * in,
                      static_cast<size_t>(r.count * in) * sizeof(float));
          row += r.count;
        }
      });
      gx = gathered;
    }
    // mid_j = A_j gx for every adapted output j, one matmul group (gx converted once).
    float* mid = scratch.get(kLoraMid, kMaxOutputs * rows_cap * static_cast<size_t>(max_rank_));
    kernels::MatmulJob jobs[kMaxOutputs];
    for (size_t j = 0; j < k; ++j) {
      jobs[j] = kernels::MatmulJob{&a_views[j], mid + j * rows_cap * static_cast<size_t>(max_rank_),
                                   nullptr};
    }
    kernels::matmul_group(std::span<const kernels::MatmulJob>(jobs, k), gx, n);
    // delta_j = B_j mid_j, each added back run by run (a long run split across the team).
    size_t delta_offset[kMaxOutputs];
    size_t offset = 0;
    for (size_t j = 0; j < k; ++j) {
      delta_offset[j] = offset;
      offset += static_cast<size_t>(n * outputs[which[j]].out);
    }
    float* delta = scratch.get(kLoraDelta, offset);
    for (size_t j = 0; j < k; ++j)
      kernels::matmul(b_views[j], jobs[j].y, n, delta + delta_offset[j]);
    for (size_t j = 0; j < k; ++j) {
      const Output& out = outputs[which[j]];
      const float* src = delta + delta_offset[j];
      for (const Run& r : g.runs) {
        kernels::add_inplace(out.y + r.begin * out.out, src, r.count * out.out);
        src += r.count * out.out;
      }
    }
  }
}

}  // namespace pagoda::model
