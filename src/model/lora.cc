#include "model/lora.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "base/check.h"
#include "kernels/lora_expand.h"
#include "tensor/float16.h"

namespace pagoda::model {
namespace {
enum Slot { kLoraMid = 40 };

constexpr size_t kMaxOutputs = LoraBatch::kMaxOutputs;
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
  // B [out, rank] -> bt [rank, out]: the expand kernel's rows run along the output.
  const auto out = static_cast<int64_t>(b.size()) / rank;
  std::vector<float> bt(b.size());
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < rank; ++k)
      bt[static_cast<size_t>(k * out + o)] = b[static_cast<size_t>(o * rank + k)];
  }
  p.b = stored(bt, p.dtype);
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
      it->rows.clear();
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
    Group& g = groups_[i];
    max_rows_ = std::max(max_rows_, g.num_rows);
    max_rank_ = std::max<int64_t>(max_rank_, g.adapter->rank);
    if (g.runs.size() == 1) continue;  // read in place
    for (const Run& r : g.runs) {
      for (int64_t t = r.begin; t < r.begin + r.count; ++t)
        g.rows.push_back(static_cast<int32_t>(t));
    }
  }
}

namespace {
// add()'s A x for every (adapter, output): at most the batch's rows (groups x their most rows)
// times kMaxOutputs outputs of at most max_rank values.
size_t mid_floats(size_t groups, int64_t max_rows, int64_t max_rank) {
  return groups * static_cast<size_t>(max_rows) * kMaxOutputs * static_cast<size_t>(max_rank);
}
}  // namespace

void LoraBatch::reserve_scratch(int64_t /*max_dim*/, Scratch& scratch) const {
  if (num_groups_ == 0) return;
  scratch.reserve(kLoraMid, mid_floats(num_groups_, max_rows_, max_rank_));
}

void LoraBatch::add(int32_t layer, std::span<const Output> outputs, const float* x, int64_t in,
                    Scratch& scratch) const {
  PAGODA_CHECK(!outputs.empty() && outputs.size() <= kMaxOutputs);
  // Every thread of the team builds the same lists (no barrier); kept between calls, so a steady
  // state allocates nothing.
  struct Lists {
    std::vector<kernels::GroupedInput> inputs;
    std::vector<kernels::LoraJob> jobs;
  };
  thread_local Lists lists;
  lists.inputs.clear();
  lists.jobs.clear();
  float* mid = scratch.get(kLoraMid, mid_floats(num_groups_, max_rows_, max_rank_));
  size_t mid_used = 0;
  for (size_t gi = 0; gi < num_groups_; ++gi) {
    const Group& g = groups_[gi];
    const auto& projections = g.adapter->layers[static_cast<size_t>(layer)];
    const int64_t n = g.num_rows;
    // One run: its rows in place; else by row number (the shrink's input, the expand's output).
    const bool in_place = g.runs.size() == 1;
    const int64_t first_row = in_place ? g.runs[0].begin : 0;
    const int32_t* rows = in_place ? nullptr : g.rows.data();
    const auto input = static_cast<int32_t>(lists.inputs.size());
    bool adapted = false;
    for (const Output& out : outputs) {
      const LoraProjection& p = projections[static_cast<size_t>(out.target)];
      if (p.rank == 0) continue;
      kernels::LoraJob job;
      job.a = matrix_view(p.a, p.dtype, p.rank, in);
      job.bt = matrix_view(p.b, p.dtype, p.rank, out.out);
      job.input = input;
      job.mid = mid + mid_used;
      mid_used += static_cast<size_t>(n * p.rank);
      job.y = out.y + first_row * out.out;
      job.ldy = out.out;
      lists.jobs.push_back(job);
      adapted = true;
    }
    if (adapted) lists.inputs.push_back(kernels::GroupedInput{x + first_row * in, rows, n});
  }
  // mid_j = A_j x then y_j += mid_j Bt_j for every adapter's rows and adapted output: one op.
  if (!lists.jobs.empty()) kernels::lora_apply(lists.inputs, lists.jobs);
}

}  // namespace pagoda::model
