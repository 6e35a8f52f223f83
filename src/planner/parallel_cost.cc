#include "planner/parallel_cost.h"

#include <algorithm>
#include <cmath>

namespace pagoda::planner {
namespace {

double latency_s(const Interconnect& link, int32_t ranks) {
  const double steps = link.ring_latency ? 2.0 * (ranks - 1) : 1.0;
  return steps * link.latency_us * 1e-6;
}

double transfer_s(const Interconnect& link, double bytes) {
  return link.bandwidth_gbs > 0 ? bytes / (link.bandwidth_gbs * 1e9) : 0;
}

}  // namespace

CommBytes comm_bytes(const model::ModelConfig& c, double a) {
  const double d = c.hidden_dim, k = c.num_experts_used, V = c.vocab_size;
  CommBytes b;
  b.tensor_parallel_all_reduce_payload = 2 * a * d;
  b.pipeline_stage_boundary = a * d;
  b.expert_parallel_all_reduce_payload = a * d;
  b.expert_all_to_all = 2 * k * a * d;
  b.vocab_all_gather = 4 * V;
  return b;
}

double all_reduce_seconds(const Interconnect& link, int32_t ranks, double bytes) {
  if (ranks <= 1) return 0;
  const double n = ranks;
  return latency_s(link, ranks) + transfer_s(link, 2 * (n - 1) / n * bytes);
}

double all_gather_seconds(const Interconnect& link, int32_t ranks, double bytes) {
  if (ranks <= 1) return 0;
  const double n = ranks;
  // A ring all-gather: n-1 steps, each passing one rank's share on.
  const double latency = (link.ring_latency ? n - 1 : 1) * link.latency_us * 1e-6;
  return latency + transfer_s(link, (n - 1) / n * bytes);
}

double message_seconds(const Interconnect& link, double bytes) {
  return link.latency_us * 1e-6 + transfer_s(link, bytes);
}

double tensor_parallel_seconds(const model::ModelConfig& c, const Interconnect& link, int32_t tp,
                               double tokens, double rows, double activation_bytes) {
  if (tp <= 1 || tokens <= 0) return 0;
  const double one = all_reduce_seconds(link, tp, tokens * activation_bytes * c.hidden_dim);
  const double gather =
      rows > 0
          ? all_gather_seconds(link, tp, rows * comm_bytes(c, activation_bytes).vocab_all_gather)
          : 0;
  return 2.0 * c.num_layers * one + gather;
}

int32_t pipeline_micro_batches(int32_t stages, double tokens) {
  if (stages <= 1) return 1;
  return static_cast<int32_t>(std::clamp(std::floor(tokens), 1.0, static_cast<double>(stages)));
}

double pipeline_bubble_fraction(int32_t stages, int32_t micro_batches) {
  if (stages <= 1) return 0;
  const double p = stages, m = std::max(1, micro_batches);
  return (p - 1) / (m + p - 1);
}

double pipeline_hops_seconds(const model::ModelConfig& c, const Interconnect& link, int32_t stages,
                             double part_tokens, double activation_bytes) {
  if (stages <= 1 || part_tokens <= 0) return 0;
  const double bytes = part_tokens * comm_bytes(c, activation_bytes).pipeline_stage_boundary;
  return (stages - 1) * message_seconds(link, bytes);
}

double pipeline_step_seconds(int32_t stages, int32_t micro_batches, double part_seconds,
                             double part_hops_seconds) {
  if (stages <= 1) return part_seconds + part_hops_seconds;
  const double p = stages, m = std::max(1, micro_batches);
  return (m + p - 1) * part_seconds / p + part_hops_seconds;
}

}  // namespace pagoda::planner
