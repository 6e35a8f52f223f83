// The communication cost of one model split over ranks (docs/design/parallel.md, "Cost model"):
// the bytes a token moves per layer under tensor (TP), pipeline (PP) and expert (EP) parallelism,
// and the time they take over an interconnect of a given latency and bandwidth. The one
// implementation of those formulas: `pagoda plan` adds them to its roofline step times
// (roofline.h) and `pagoda bench --json` reports them (`parallel_cost_model`) with the transport it
// measured.
//
// Formulas (hidden d, L layers, vocabulary V, a bytes per activation, n ranks, T tokens a step):
// - TP: two all-reduces of T x d activations per layer (after the attention output and after the
//   FFN down projection); a ring all-reduce moves 2(n-1)/n of the payload through each rank's
//   link. Plus one all-gather of each sampled row's logits (f32, vocabulary-split): (n-1)/n x 4V
//   bytes per row.
// - PP over p stages: T x d activations cross each of the p-1 stage boundaries (one message).
//   The step runs as m micro-batches (pagoda: m = min(p, T)); a GPipe schedule takes m + p - 1
//   stage slots of one micro-batch, of which p - 1 are the bubble: (p-1) / (m+p-1) of the time.
// - EP as built (experts split by index under TP): the MoE FFN's all-reduce, a d bytes per token
//   per layer; an all-to-all dispatch would move each token's hidden state to its k experts'
//   ranks and back, 2 k a d x (n-1)/n.
#pragma once

#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace pagoda::planner {

// A link between ranks.
struct Interconnect {
  std::string name;  // "nvlink4", "pcie5", "ib-ndr400", "100gbe", "mpi" (measured)
  // One small all-reduce over the group (ring_latency false: NCCL inside a node, a measured
  // shared-memory transport), or one message step (ring_latency true: a ring over a network pays
  // 2(n-1) of them per all-reduce). A point-to-point message pays it once.
  double latency_us = 0;
  double bandwidth_gbs = 0;  // per rank, one direction, 1e9 bytes/s
  bool ring_latency = false;
};

// Bytes per token per layer (per sampled row for the vocabulary gather), before the ring's
// (n-1)/n shares.
struct CommBytes {
  double tensor_parallel_all_reduce_payload = 0;  // 2 a d
  double pipeline_stage_boundary = 0;             // a d, per boundary
  double expert_parallel_all_reduce_payload = 0;  // a d
  double expert_all_to_all = 0;                   // 2 k a d, times (n-1)/n
  double vocab_all_gather = 0;                    // 4 V per sampled row, times (n-1)/n
};
CommBytes comm_bytes(const model::ModelConfig& c, double activation_bytes);

// Seconds of one all-reduce of `bytes` over `ranks` ranks, of one all-gather of `bytes` in all
// (each rank contributes bytes / ranks), and of one point-to-point message. 0 for one rank.
double all_reduce_seconds(const Interconnect& link, int32_t ranks, double bytes);
double all_gather_seconds(const Interconnect& link, int32_t ranks, double bytes);
double message_seconds(const Interconnect& link, double bytes);

// TP over `tp` ranks, one step of `tokens` tokens sampling `rows` logit rows: 2 L all-reduces of
// tokens x d activations and the logits' all-gather.
double tensor_parallel_seconds(const model::ModelConfig& c, const Interconnect& link, int32_t tp,
                               double tokens, double rows, double activation_bytes);

// PP: the micro-batches pagoda cuts a step of `tokens` rows into over `stages` stages
// (model/micro_batch.h: min(stages, tokens), at least 1), the bubble share of a step and the
// stage hops of one micro-batch of `part_tokens` (p-1 boundaries).
int32_t pipeline_micro_batches(int32_t stages, double tokens);
double pipeline_bubble_fraction(int32_t stages, int32_t micro_batches);
double pipeline_hops_seconds(const model::ModelConfig& c, const Interconnect& link, int32_t stages,
                             double part_tokens, double activation_bytes);
// A pipelined step: m micro-batches each costing `part_seconds` on the whole model (one stage
// computes 1/p of it) take (m + p - 1) stage slots, plus one micro-batch's hops.
double pipeline_step_seconds(int32_t stages, int32_t micro_batches, double part_seconds,
                             double part_hops_seconds);

}  // namespace pagoda::planner
