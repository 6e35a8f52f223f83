// The plan: for each weight scheme and tensor- and pipeline-parallel size, whether the model fits,
// how many KV tokens and sequences a replica holds, its prefill/decode speed (roofline.h), how many
// replicas serve the load within the latency targets, and what that costs against an API.
//
// Queueing: a replica running `batch` sequences at once is an M/M/c queue with c = batch slots
// and service time S = TTFT0 + output_len x TPOT(batch) (Erlang C); a request waits for a slot
// with probability C(c, a), the wait beyond t has probability C e^{-(c mu - lambda) t}, so
// p99 TTFT = TTFT0 + max(0, ln(100 C) / (c mu - lambda)). TPOT(batch) is the step time with
// `batch` decodes plus the prefill tokens the same load brings per step (batch x input/output,
// chunked prefill); p99 TPOT adds one whole prompt (up to the chunk budget) to a step. Each
// batch size up to what the KV cache and max_num_seqs allow is tried; the largest load meeting
// both targets (and at most 90% utilisation) is a replica's capacity.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/hardware.h"
#include "planner/model_spec.h"
#include "planner/roofline.h"

namespace pagoda::planner {

struct Workload {
  double qps = 1;
  int64_t input_len = 512;
  int64_t output_len = 128;
  double p99_ttft_s = 0;               // 0: no target
  double p99_tpot_s = 0;               // 0: no target
  double price_per_hour = 0;           // per device; 0: no cost figures
  double api_price_per_1m_tokens = 0;  // blended input + output; 0: no comparison
  int32_t clients = 16;                // the closed-loop figure (`bench engine --concurrency`)
  int32_t max_num_seqs = 256;          // the engine's batch limit (vLLM's default)
  int64_t max_batched_tokens = 2048;   // the chunked-prefill budget per step
  double kv_bytes_per_element = 2;     // f16
  double max_utilization = 0.9;
};

// Where a replica's devices are: nodes of `devices_per_node` devices (GPUs on the hardware's
// interconnect; `cpu`: ranks sharing one machine over its measured shared-memory transport)
// joined by `network`. A replica of tp x pp devices is laid out as pagoda's ranks are (rank =
// stage x tp + shard): its TP groups cross the network only when tp > devices_per_node, its
// stage hops when tp x pp > devices_per_node (then every hop is costed on the network, an upper
// bound). cpu ranks on one machine share its cores and bandwidth (DeviceSetup::ranks_per_device).
struct Cluster {
  int32_t devices_per_node = 1;  // the --hardware count (GPUs; cpu: ranks per machine)
  int32_t nodes = 1;
  Interconnect network{};              // between nodes (used when nodes > 1)
  int32_t pipeline_parallel_size = 0;  // 0: every power of two up to `nodes`
};

struct PlanRow {
  QuantScheme quant;
  int32_t tp = 1;
  int32_t pp = 1;
  std::string tp_link, pp_link;  // interconnect names ("" when not split)
  double decode_comm_s = 0;      // of one sequence's decode step (tpot_s)
  double decode_bubble = 0;      // pipeline bubble share of that step
  bool fits = false;
  std::string why_not;  // when it does not fit
  double weight_gb_per_device = 0;
  double kv_bytes_per_token = 0;  // per device
  int64_t kv_tokens = 0;          // per replica
  int64_t max_seqs = 0;           // full-length (input + output) sequences in the KV cache
  double prefill_tps = 0;         // one prompt of input_len as one step
  double ttft_s = 0;              // unloaded
  double decode_tps = 0;          // one sequence
  double tpot_s = 0;              // one sequence
  double clients_output_tps = 0;  // `clients` closed-loop clients
  // At the chosen batch:
  int32_t batch = 0;
  double batch_tpot_s = 0, batch_p99_tpot_s = 0;
  double capacity_qps = 0;  // per replica within the targets
  double output_tps_at_capacity = 0;
  bool meets_targets = false;  // some batch meets both targets
  int64_t replicas = 0;
  int64_t devices = 0;
  double load_p99_ttft_s = 0;  // at qps / replicas
  double monthly_cost = 0, cost_per_1m_tokens = 0, api_monthly_cost = 0;
};

// Erlang C: probability that an arrival waits, c servers, offered load a = lambda / mu < c.
double erlang_c(int64_t servers, double offered_load);

// Rows for every scheme, every power-of-two tp up to devices_per_node (cpu: up to all the ranks,
// across nodes over the network) and every power-of-two pp up to `nodes` (or the one
// pipeline_parallel_size), with
// tp x pp at most the cluster's devices, heads divisible by tp and at least one layer per stage.
// Errors name the bad workload or cluster field.
Result<std::vector<PlanRow>> make_plan(const PlanModel& model, const HardwareSpec& hw,
                                       const Cluster& cluster, const Workload& w);

constexpr double kHoursPerMonth = 730;

}  // namespace pagoda::planner
