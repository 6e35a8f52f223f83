#include "planner/roofline.h"

#include <algorithm>
#include <cmath>

namespace pagoda::planner {
namespace {

double type_bytes_per_weight(tensor::DType t) {
  const tensor::DTypeInfo& info = tensor::dtype_info(t);
  return static_cast<double>(info.type_size) / info.block_size;
}

tensor::DType matrix_dtype(const WeightMatrix& m, const QuantScheme& q) {
  if (q.layout == QuantScheme::Layout::kFile && m.dtype) return *m.dtype;
  if (m.embedding) return q.embedding;
  if (m.output) return q.output;
  return q.linear;
}

bool uses_layout(const WeightMatrix& m, const QuantScheme& q) {
  return !m.embedding && !m.output &&
         (q.layout == QuantScheme::Layout::kInt8Channel ||
          q.layout == QuantScheme::Layout::kInt4Group);
}

// Seconds to read `bytes` and compute `flops` of one matrix type on this hardware.
double matmul_seconds(const HardwareSpec& hw, tensor::DType dtype, bool int8, double bytes,
                      double flops) {
  if (auto it = hw.matmul.find(dtype); it != hw.matmul.end()) {
    return std::max(bytes / (it->second.gemv_gbs * 1e9), flops / (it->second.gemm_gflops * 1e9));
  }
  const double peak = (int8 && hw.int8_tops > 0 ? hw.int8_tops : hw.fp16_tflops) * 1e12;
  return std::max(bytes / (hw.bandwidth_gbs * 1e9 * hw.bandwidth_efficiency),
                  flops / (peak * hw.compute_efficiency));
}

}  // namespace

std::vector<QuantScheme> quant_schemes(const HardwareSpec& hw, const PlanModel& model) {
  using L = QuantScheme::Layout;
  using tensor::DType;
  std::vector<QuantScheme> out;
  out.push_back({"f16", "F16/BF16", L::kType, DType::kF16, DType::kF16, DType::kF16, false});
  if (hw.is_cpu()) {
    // What `pagoda quantize` writes: Q8_0 everywhere; Q4_0 with the output in Q6_K.
    out.push_back({"int8", "Q8_0", L::kType, DType::kQ8_0, DType::kQ8_0, DType::kQ8_0, false});
    out.push_back(
        {"int4", "Q4_0 (output Q6_K)", L::kType, DType::kQ4_0, DType::kQ4_0, DType::kQ6_K, false});
  } else {
    out.push_back({"int8", "W8A8 INT8, per-channel scales", L::kInt8Channel, DType::kI8,
                   DType::kF16, DType::kF16, hw.int8_tops > 0});
    out.push_back({"int4", "AWQ/GPTQ 4-bit, group 128", L::kInt4Group, DType::kQ4_0, DType::kF16,
                   DType::kF16, false});
  }
  if (!model.file_matrices.empty()) {
    out.push_back(
        {"file", model.file_types, L::kFile, DType::kF16, DType::kF16, DType::kF16, false});
  }
  return out;
}

double matrix_bytes(const WeightMatrix& m, const QuantScheme& q) {
  const double weights = static_cast<double>(m.rows) * static_cast<double>(m.cols);
  if (uses_layout(m, q)) {
    if (q.layout == QuantScheme::Layout::kInt8Channel) return weights + 2.0 * m.rows;
    return weights * 0.5 + static_cast<double>(m.rows) * std::ceil(m.cols / 128.0) * 2.5;
  }
  return weights * type_bytes_per_weight(matrix_dtype(m, q));
}

double weight_bytes(const PlanModel& model, const QuantScheme& q) {
  const auto& matrices =
      q.layout == QuantScheme::Layout::kFile ? model.file_matrices : model.matrices;
  double total = 0;
  for (const WeightMatrix& m : matrices)
    total += matrix_bytes(m, q) * static_cast<double>(m.count);
  return total;
}

Interconnect DeviceSetup::tp_interconnect() const {
  return tp_link.bandwidth_gbs > 0 ? tp_link : hw->node_link();
}

Interconnect DeviceSetup::pp_interconnect() const {
  return pp_link.bandwidth_gbs > 0 ? pp_link : hw->node_link();
}

double activation_bytes(const HardwareSpec& hw) {
  return hw.is_cpu() ? 4 : 2;
}

double kv_bytes_per_token(const DeviceSetup& s) {
  return s.model->kv_elements_per_token(s.tp) * s.kv_bytes_per_element / std::max(1, s.pp);
}

namespace {

// One step of the whole model on one TP group (no pipeline): matmuls, attention, TP
// communication and the cpu's barriers.
StepCost group_step_cost(const DeviceSetup& s, double decode_seqs, double decode_ctx,
                         double prefill_tokens, double prefill_ctx) {
  const model::ModelConfig& c = s.model->config;
  const HardwareSpec& hw = *s.hw;
  const double tokens = decode_seqs + prefill_tokens;
  const double tp = s.tp;
  StepCost cost;
  if (tokens <= 0) return cost;
  const auto& matrices =
      s.quant.layout == QuantScheme::Layout::kFile ? s.model->file_matrices : s.model->matrices;
  for (const WeightMatrix& m : matrices) {
    const double per = matrix_bytes(m, s.quant);
    if (m.embedding) {  // one row per token
      cost.matmul_s += tokens * per / static_cast<double>(m.rows) /
                       (hw.bandwidth_gbs * 1e9 * hw.bandwidth_efficiency) / tp;
      continue;
    }
    // A probed shape (dense matrices on one device): its measured time per call at this many
    // tokens, once per matrix of the model.
    if (m.num_experts == 0 && s.tp == 1) {
      if (const ShapeRate* r = hw.find_shape(matrix_dtype(m, s.quant), m.rows, m.cols)) {
        cost.matmul_s += static_cast<double>(m.count) * r->seconds_at(tokens);
        continue;
      }
    }
    // Vectors (norms, biases) are read once and multiply nothing worth counting.
    const double bytes = m.touched_count(tokens) * per / tp;
    const double flops = 2.0 * static_cast<double>(m.rows) * static_cast<double>(m.cols) *
                         m.active_count() * tokens / tp;
    cost.matmul_s +=
        matmul_seconds(hw, matrix_dtype(m, s.quant), s.quant.int8_compute, bytes, flops);
  }
  // Attention: QK and PV per (token, context) pair; MLA works in the latent space.
  const double per_pair =
      c.mla() ? 2.0 * c.num_layers * c.num_heads * (2.0 * c.kv_lora_rank + c.rope_dims)
              : 2.0 * c.num_layers * c.num_heads * (c.head_dim + c.value_dim());
  const double pairs = decode_seqs * decode_ctx + prefill_tokens * prefill_ctx;
  const double kv_bytes = s.model->kv_elements_per_token(s.tp) * s.kv_bytes_per_element *
                          (decode_seqs * decode_ctx + prefill_tokens);
  const double attn_peak = hw.fp16_tflops * 1e12 * hw.compute_efficiency;
  cost.attention_s = std::max(kv_bytes / (hw.bandwidth_gbs * 1e9 * hw.bandwidth_efficiency),
                              per_pair * pairs / tp / attn_peak);
  // Two all-reduces per layer (after attention and after the FFN) and the logits' all-gather of
  // the rows sampled (a decode token each; a prefill its last).
  const double rows = decode_seqs + (prefill_tokens > 0 ? 1 : 0);
  cost.comm_s =
      tensor_parallel_seconds(c, s.tp_interconnect(), s.tp, tokens, rows, activation_bytes(hw));
  cost.matmul_s *= s.ranks_per_device;
  cost.attention_s *= s.ranks_per_device;
  cost.overhead_s = c.num_layers * kSyncsPerLayer * hw.sync_us * 1e-6;
  cost.seconds = cost.matmul_s + cost.attention_s + cost.comm_s + cost.overhead_s;
  return cost;
}

}  // namespace

StepCost step_cost(const DeviceSetup& s, double decode_seqs, double decode_ctx,
                   double prefill_tokens, double prefill_ctx) {
  if (s.pp <= 1) return group_step_cost(s, decode_seqs, decode_ctx, prefill_tokens, prefill_ctx);
  // Pipeline: m micro-batches of 1/m of the rows each; a stage computes 1/pp of the layers of
  // each and the step takes m + pp - 1 stage slots, plus one micro-batch's hops.
  const double tokens = decode_seqs + prefill_tokens;
  const int32_t m = pipeline_micro_batches(s.pp, tokens);
  const StepCost part =
      group_step_cost(s, decode_seqs / m, decode_ctx, prefill_tokens / m, prefill_ctx);
  const double slots = (m + s.pp - 1.0) / s.pp;
  const double hops = pipeline_hops_seconds(s.model->config, s.pp_interconnect(), s.pp, tokens / m,
                                            activation_bytes(*s.hw));
  StepCost cost;
  cost.micro_batches = m;
  cost.bubble = pipeline_bubble_fraction(s.pp, m);
  cost.matmul_s = part.matmul_s * slots;
  cost.attention_s = part.attention_s * slots;
  cost.overhead_s = part.overhead_s * slots;
  cost.comm_s = part.comm_s * slots + hops;
  cost.seconds = pipeline_step_seconds(s.pp, m, part.seconds, hops);
  return cost;
}

}  // namespace pagoda::planner
