#include "planner/capacity.h"

#include <algorithm>
#include <cmath>

namespace pagoda::planner {
namespace {

Status validate(const Workload& w) {
  if (!(w.qps > 0) || w.qps > 1e9) return invalid_argument("--qps must be in (0, 1e9]");
  if (w.input_len < 1 || w.input_len > model::ConfigLimits::kMaxContext) {
    return invalid_argument("--input-len must be in [1, {}]", model::ConfigLimits::kMaxContext);
  }
  if (w.output_len < 1 || w.output_len > model::ConfigLimits::kMaxContext) {
    return invalid_argument("--output-len must be in [1, {}]", model::ConfigLimits::kMaxContext);
  }
  if (!(w.p99_ttft_s >= 0) || w.p99_ttft_s > 1e6)
    return invalid_argument("--p99-ttft must be in [0, 1e6] s");
  if (!(w.p99_tpot_s >= 0) || w.p99_tpot_s > 1e6)
    return invalid_argument("--p99-tpot must be in [0, 1e6] s");
  if (!(w.price_per_hour >= 0) || w.price_per_hour > 1e6) {
    return invalid_argument("--price-per-hour must be in [0, 1e6]");
  }
  if (!(w.api_price_per_1m_tokens >= 0) || w.api_price_per_1m_tokens > 1e6) {
    return invalid_argument("--api-price-per-1m-tokens must be in [0, 1e6]");
  }
  if (w.clients < 1 || w.clients > 65536)
    return invalid_argument("--clients must be in [1, 65536]");
  if (w.max_num_seqs < 1 || w.max_num_seqs > 65536) {
    return invalid_argument("--max-num-seqs must be in [1, 65536]");
  }
  if (w.max_batched_tokens < 1 || w.max_batched_tokens > (1 << 24)) {
    return invalid_argument("--max-num-batched-tokens must be in [1, 2^24]");
  }
  if (!(w.kv_bytes_per_element > 0) || w.kv_bytes_per_element > 8) {
    return invalid_argument("KV cache bytes per element out of range");
  }
  return Status::ok_status();
}

struct Load {
  double tpot = 0, p99_tpot = 0, ttft0 = 0;
};

// Step times with `batch` sequences decoding under steady load.
Load at_batch(const DeviceSetup& s, const Workload& w, double batch) {
  const double in = static_cast<double>(w.input_len), out = static_cast<double>(w.output_len);
  const double ctx = in + out / 2;
  const double chunk = std::min<double>(in, static_cast<double>(w.max_batched_tokens));
  Load l;
  l.tpot = step_cost(s, batch, ctx, batch * in / out, in / 2).seconds;
  l.p99_tpot = step_cost(s, batch, ctx, std::max(batch * in / out, chunk), in / 2).seconds;
  l.ttft0 = std::ceil(in / chunk) * step_cost(s, batch, ctx, chunk, in / 2).seconds;
  return l;
}

// p99 of the wait for a slot in M/M/c.
double wait_p99(int64_t c, double mu, double lambda) {
  const double a = lambda / mu;
  if (a >= static_cast<double>(c)) return INFINITY;
  const double pw = erlang_c(c, a);
  if (pw <= 0.01) return 0;
  return std::log(pw / 0.01) / (static_cast<double>(c) * mu - lambda);
}

Status validate(const Cluster& k, const HardwareSpec& hw) {
  if (k.devices_per_node < 1 || k.devices_per_node > HardwareLimits::kMaxDevices) {
    return invalid_argument("--hardware: device count must be in [1, {}]",
                            HardwareLimits::kMaxDevices);
  }
  if (k.devices_per_node > 1 && !(hw.node_link().bandwidth_gbs > 0)) {
    return invalid_argument(
        "--hardware: {} x{} needs the link between the devices of a node (interconnect_gbs{})",
        hw.name, k.devices_per_node,
        hw.is_cpu() ? ": measure it with `mpirun -np N pagoda plan --calibrate FILE`" : "");
  }
  if (k.nodes < 1 || k.nodes > HardwareLimits::kMaxDevices) {
    return invalid_argument("--nodes must be in [1, {}]", HardwareLimits::kMaxDevices);
  }
  if (k.nodes > 1 && !(k.network.bandwidth_gbs > 0)) {
    return invalid_argument("--network: no network between the {} nodes", k.nodes);
  }
  if (k.pipeline_parallel_size < 0 || k.pipeline_parallel_size > HardwareLimits::kMaxDevices) {
    return invalid_argument("--pipeline-parallel-size must be in [0, {}]",
                            HardwareLimits::kMaxDevices);
  }
  return Status::ok_status();
}

// One row of the plan: memory fit, unloaded speeds, the batch that serves the most load within the
// targets, replicas and cost.
PlanRow plan_row(const DeviceSetup& s, const Workload& w) {
  const double in = static_cast<double>(w.input_len), out = static_cast<double>(w.output_len);
  PlanRow r;
  r.quant = s.quant;
  r.tp = s.tp;
  r.pp = s.pp;
  if (s.tp > 1) r.tp_link = s.tp_link.name;
  if (s.pp > 1) r.pp_link = s.pp_link.name;
  r.weight_gb_per_device = weight_bytes(*s.model, s.quant) / (s.tp * s.pp) / 1e9;
  r.kv_bytes_per_token = kv_bytes_per_token(s);
  const double free_bytes =
      s.hw->usable_bytes() / s.ranks_per_device - r.weight_gb_per_device * 1e9;
  const double seq_tokens = in + out;
  r.kv_tokens =
      free_bytes > 0
          ? static_cast<int64_t>(std::min(1e15, std::floor(free_bytes / r.kv_bytes_per_token)))
          : 0;
  r.max_seqs = static_cast<int64_t>(static_cast<double>(r.kv_tokens) / seq_tokens);
  r.fits = r.max_seqs >= 1;
  if (!r.fits) {
    r.why_not = free_bytes <= 0 ? "weights do not fit" : "no room for one sequence's KV";
  }
  r.ttft_s = prefill_seconds(s, in);
  r.prefill_tps = in / r.ttft_s;
  const StepCost decode = step_cost(s, 1, in + out / 2, 0, 0);
  r.tpot_s = decode.seconds;
  r.decode_tps = 1 / r.tpot_s;
  r.decode_comm_s = decode.comm_s;
  r.decode_bubble = decode.bubble;
  const double clients = std::min<double>(w.clients, std::max<int64_t>(1, r.max_seqs));
  r.clients_output_tps =
      clients / step_cost(s, clients, in + out / 2, clients * in / out, in / 2).seconds;
  if (r.fits) {
    const int64_t max_batch = std::min<int64_t>(r.max_seqs, w.max_num_seqs);
    double best = 0;
    // Every batch up to 8, then steps of an eighth, ending exactly at max_batch.
    for (int64_t b = 1; b <= max_batch;
         b = b == max_batch ? max_batch + 1 : std::min(max_batch, b < 8 ? b + 1 : b + b / 8)) {
      const Load l = at_batch(s, w, static_cast<double>(b));
      if (w.p99_tpot_s > 0 && l.p99_tpot > w.p99_tpot_s) break;  // grows with the batch
      if (w.p99_ttft_s > 0 && l.ttft0 > w.p99_ttft_s) break;
      const double mu = 1 / (l.ttft0 + out * l.tpot);
      // The largest arrival rate within the utilisation cap and the TTFT target.
      double lo = 0, hi = w.max_utilization * static_cast<double>(b) * mu;
      if (w.p99_ttft_s > 0 && l.ttft0 + wait_p99(b, mu, hi) > w.p99_ttft_s) {
        for (int i = 0; i < 60; ++i) {
          const double mid = (lo + hi) / 2;
          (l.ttft0 + wait_p99(b, mu, mid) <= w.p99_ttft_s ? lo : hi) = mid;
        }
        hi = lo;
      }
      if (hi > best) {
        best = hi;
        r.batch = static_cast<int32_t>(b);
        r.batch_tpot_s = l.tpot;
        r.batch_p99_tpot_s = l.p99_tpot;
      }
    }
    r.meets_targets = best > 0;
    r.capacity_qps = best;
    r.output_tps_at_capacity = best * out;
    if (r.meets_targets) {
      r.replicas = static_cast<int64_t>(std::ceil(w.qps / best - 1e-9));
      r.devices = r.replicas * s.tp * s.pp;
      const Load l = at_batch(s, w, r.batch);
      const double mu = 1 / (l.ttft0 + out * l.tpot);
      r.load_p99_ttft_s = l.ttft0 + wait_p99(r.batch, mu, w.qps / static_cast<double>(r.replicas));
    }
  }
  const double tokens_per_month = w.qps * (in + out) * 3600 * kHoursPerMonth;
  if (r.meets_targets && w.price_per_hour > 0) {
    r.monthly_cost = static_cast<double>(r.devices) * w.price_per_hour * kHoursPerMonth;
    r.cost_per_1m_tokens = r.monthly_cost / tokens_per_month * 1e6;
  }
  r.api_monthly_cost = tokens_per_month / 1e6 * w.api_price_per_1m_tokens;
  return r;
}

}  // namespace

double erlang_c(int64_t servers, double a) {
  if (servers <= 0 || !(a >= 0)) return 1;
  if (a >= static_cast<double>(servers)) return 1;
  double b = 1;  // Erlang B by its recurrence (stable for large c)
  for (int64_t k = 1; k <= servers; ++k)
    b = a * b / (static_cast<double>(k) + a * b);
  const double rho = a / static_cast<double>(servers);
  return b / (1 - rho * (1 - b));
}

Result<std::vector<PlanRow>> make_plan(const PlanModel& model, const HardwareSpec& hw,
                                       const Cluster& cluster, const Workload& w) {
  PAGODA_RETURN_IF_ERROR(validate(w));
  PAGODA_RETURN_IF_ERROR(validate(cluster, hw));
  const model::ModelConfig& c = model.config;
  if (w.input_len + w.output_len > c.context_length) {
    return invalid_argument("--input-len + --output-len = {} exceeds the model's context {}",
                            w.input_len + w.output_len, c.context_length);
  }
  const int64_t devices = int64_t{cluster.devices_per_node} * cluster.nodes;
  // TP stays inside a node on GPUs; on cpu it may cross the network (the 100 GbE case).
  const int64_t max_tp = hw.is_cpu() ? devices : cluster.devices_per_node;
  std::vector<int32_t> pps;
  if (cluster.pipeline_parallel_size > 0) {
    pps.push_back(cluster.pipeline_parallel_size);
  } else {
    for (int32_t pp = 1; pp <= cluster.nodes; pp *= 2)
      pps.push_back(pp);
  }
  std::vector<PlanRow> rows;
  for (const QuantScheme& q : quant_schemes(hw, model)) {
    for (int32_t pp : pps) {
      for (int32_t tp = 1; tp <= max_tp; tp *= 2) {
        // Heads split evenly over the ranks (vLLM's requirement); a layer or more per stage.
        if (c.num_heads % tp != 0 || c.num_layers < pp || int64_t{tp} * pp > devices) continue;
        DeviceSetup s{&model, &hw, q, tp, w.kv_bytes_per_element};
        s.pp = pp;
        s.tp_link = tp > cluster.devices_per_node ? cluster.network : hw.node_link();
        s.pp_link = int64_t{tp} * pp > cluster.devices_per_node ? cluster.network : hw.node_link();
        if (hw.is_cpu()) {  // the replica's ranks on one machine share it
          s.ranks_per_device =
              static_cast<int32_t>(std::min<int64_t>(int64_t{tp} * pp, cluster.devices_per_node));
        }
        rows.push_back(plan_row(s, w));
      }
    }
  }
  return rows;
}

}  // namespace pagoda::planner
