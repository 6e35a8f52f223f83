// `pagoda plan -m MODEL_OR_CONFIG --hardware NAME[xN] [--nodes M --network NET]
// [--pipeline-parallel-size P] --qps Q --input-len I --output-len O [--p99-ttft S --p99-tpot S]
// [--price-per-hour P --api-price-per-1m-tokens A] [--json]`: capacity and cost of serving a
// model (src/planner: memory fit, roofline, queueing, cost) for each weight scheme and tensor- and
// pipeline-parallel size, with the communication of the split from planner/parallel_cost.h.
// `--hardware cpu` measures this machine (a few seconds) unless `--calibration FILE` gives what
// `pagoda plan --calibrate FILE` measured; `mpirun -np N pagoda plan --calibrate FILE` also
// measures the shared-memory transport between N ranks, which `--hardware cpu:N` (N ranks on one
// machine) plans with.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "pagoda/parallel.h"
#include "planner/capacity.h"
#include "planner/cpu_probe.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"

namespace pagoda::cli {
namespace {

struct PlanArgs {
  std::string model, hardware = "h100-sxm", hardware_file, calibration, calibrate_out;
  std::string kv_cache_dtype = "f16";
  std::string network;  // default: ib-ndr400 (GPUs), 100gbe (cpu)
  int32_t nodes = 1, pipeline_parallel_size = 0;
  planner::Workload w;
  int32_t threads = 0;
  bool json = false;
};

Result<std::string> read_small_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("{}: cannot open {}", what, path);
  std::string text;
  char buf[4096];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    text.append(buf, static_cast<size_t>(in.gcount()));
    if (text.size() > planner::HardwareLimits::kMaxFileBytes) {
      return invalid_argument("{}: {} is larger than {} bytes", what, path,
                              planner::HardwareLimits::kMaxFileBytes);
    }
  }
  return text;
}

Result<planner::HardwareSpec> resolve_hardware(const PlanArgs& a, int32_t* count) {
  PAGODA_ASSIGN_OR_RETURN(planner::HardwareRequest req,
                          planner::parse_hardware_request(a.hardware));
  if (req.name == "cpu") {
    *count = std::max(1, req.count);  // ranks on one machine (make_plan checks the transport)
    if (!a.calibration.empty()) {
      PAGODA_ASSIGN_OR_RETURN(std::string text, read_small_file(a.calibration, "--calibration"));
      PAGODA_ASSIGN_OR_RETURN(auto specs, planner::parse_hardware_json(text));
      const planner::HardwareSpec* cpu = planner::find_hardware(specs, "cpu");
      if (cpu == nullptr) return invalid_argument("--calibration: no entry named \"cpu\"");
      return *cpu;
    }
    planner::CpuProbeOptions o;
    o.threads = a.threads;
    return planner::probe_cpu(o);
  }
  std::string text(planner::builtin_hardware_json());
  if (!a.hardware_file.empty()) {
    PAGODA_ASSIGN_OR_RETURN(text, read_small_file(a.hardware_file, "--hardware-file"));
  }
  PAGODA_ASSIGN_OR_RETURN(auto specs, planner::parse_hardware_json(text));
  const planner::HardwareSpec* hw = planner::find_hardware(specs, req.name);
  if (hw == nullptr) {
    std::string names = "cpu";
    for (const auto& s : specs)
      names += ", " + s.name;
    return not_found("--hardware: unknown \"{}\" (known: {})", req.name, names);
  }
  if (req.count > hw->max_devices) {
    return invalid_argument("--hardware: {} allows at most {} devices per replica", hw->name,
                            hw->max_devices);
  }
  *count = req.count > 0 ? req.count : hw->max_devices;
  return *hw;
}

// The network between nodes (only looked up when --nodes > 1): the hardware file's "networks".
Result<planner::Interconnect> resolve_network(const PlanArgs& a, const planner::HardwareSpec& hw) {
  if (a.nodes <= 1) return planner::Interconnect{};
  std::string text(planner::builtin_hardware_json());
  if (!a.hardware_file.empty()) {
    PAGODA_ASSIGN_OR_RETURN(text, read_small_file(a.hardware_file, "--hardware-file"));
  }
  PAGODA_ASSIGN_OR_RETURN(auto networks, planner::parse_networks_json(text));
  const std::string name = !a.network.empty() ? a.network : hw.is_cpu() ? "100gbe" : "ib-ndr400";
  const planner::Interconnect* n = planner::find_network(networks, name);
  if (n == nullptr) {
    std::string names;
    for (const auto& x : networks)
      names += (names.empty() ? "" : ", ") + x.name;
    return not_found("--network: unknown \"{}\" (known: {})", name.substr(0, 64),
                     names.empty() ? "none" : names);
  }
  return *n;
}

Result<double> kv_bytes_per_element(const std::string& name) {
  if (name == "f16" || name == "bf16") return 2.0;
  if (name == "q8_0") return 34.0 / 32.0;
  if (name == "fp8" || name == "int8") return 1.0;
  if (name == "f32") return 4.0;
  return invalid_argument("--kv-cache-dtype: \"{}\" is not one of f16, bf16, q8_0, fp8, f32",
                          name.substr(0, 32));
}

nlohmann::json row_json(const planner::PlanRow& r) {
  nlohmann::json j = {
      {"quant", r.quant.name},
      {"format", r.quant.format},
      {"tp", r.tp},
      {"pp", r.pp},
      {"tp_link", r.tp_link},
      {"pp_link", r.pp_link},
      {"decode_comm_s", r.decode_comm_s},
      {"decode_pipeline_bubble", r.decode_bubble},
      {"fits", r.fits},
      {"weight_gb_per_device", r.weight_gb_per_device},
      {"kv_bytes_per_token_per_device", r.kv_bytes_per_token},
      {"kv_tokens", r.kv_tokens},
      {"max_concurrent_seqs", r.max_seqs},
      {"prefill_tokens_per_s", r.prefill_tps},
      {"ttft_s", r.ttft_s},
      {"decode_tokens_per_s", r.decode_tps},
      {"tpot_s", r.tpot_s},
      {"clients_output_tokens_per_s", r.clients_output_tps},
      {"meets_targets", r.meets_targets},
  };
  if (!r.fits) j["why_not"] = r.why_not;
  if (r.meets_targets) {
    j["batch"] = r.batch;
    j["batch_tpot_s"] = r.batch_tpot_s;
    j["batch_p99_tpot_s"] = r.batch_p99_tpot_s;
    j["capacity_qps_per_replica"] = r.capacity_qps;
    j["output_tokens_per_s_per_replica"] = r.output_tps_at_capacity;
    j["replicas"] = r.replicas;
    j["devices"] = r.devices;
    j["p99_ttft_s_at_load"] = r.load_p99_ttft_s;
    j["monthly_cost"] = r.monthly_cost;
    j["cost_per_1m_tokens"] = r.cost_per_1m_tokens;
  }
  j["api_monthly_cost"] = r.api_monthly_cost;
  return j;
}

int run_plan(const PlanArgs& a) {
  if (!a.calibrate_out.empty()) {
    // Under mpirun every rank measures the shared-memory transport with rank 0; then rank 0
    // alone probes the machine.
    const TransportFigures transport = measure_transport();
    if (parallel_rank() != 0) return 0;
    planner::CpuProbeOptions o;
    o.threads = a.threads;
    std::optional<planner::PlanModel> model;
    if (!a.model.empty()) {  // also time the model's own weight shapes
      auto m = planner::load_plan_model(a.model);
      if (!m.ok()) return fail(m.status().message());
      model = std::move(*m);
      o.model = &*model;
    }
    auto hw = planner::probe_cpu(o);
    if (!hw.ok()) return fail(hw.status().message());
    if (transport.ranks > 1) {
      hw->interconnect = "shm-" + transport.name;
      hw->allreduce_latency_us = transport.all_reduce_latency_us;
      hw->interconnect_gbs = transport.all_reduce_bandwidth_gbs;
      hw->max_devices = transport.ranks;
      std::printf("%d ranks: all-reduce %.2f us, %.3g GB/s\n", transport.ranks,
                  transport.all_reduce_latency_us, transport.all_reduce_bandwidth_gbs);
    }
    std::ofstream out(a.calibrate_out, std::ios::binary);
    out << planner::hardware_to_json(*hw);
    if (!out) return fail("--calibrate: cannot write " + a.calibrate_out);
    std::printf("wrote %s: %.1f GB/s read, %zu weight types, %zu model shapes, %.2f us per op\n",
                a.calibrate_out.c_str(), hw->bandwidth_gbs, hw->matmul.size(), hw->shapes.size(),
                hw->sync_us);
    return 0;
  }
  if (a.model.empty())
    return fail("-m is required (a GGUF file, HF directory, config.json or preset)");
  auto model = planner::load_plan_model(a.model);
  if (!model.ok()) return fail(model.status().message());
  int32_t count = 1;
  auto hw = resolve_hardware(a, &count);
  if (!hw.ok()) return fail(hw.status().message());
  planner::Workload w = a.w;
  auto kv = kv_bytes_per_element(a.kv_cache_dtype);
  if (!kv.ok()) return fail(kv.status().message());
  w.kv_bytes_per_element = *kv;
  auto network = resolve_network(a, *hw);
  if (!network.ok()) return fail(network.status().message());
  const planner::Cluster cluster{count, a.nodes, *network, a.pipeline_parallel_size};
  auto rows = planner::make_plan(*model, *hw, cluster, w);
  if (!rows.ok()) return fail(rows.status().message());

  const auto& c = model->config;
  if (a.json) {
    nlohmann::json out;
    out["model"] = {{"name", model->name},           {"source", model->source},
                    {"params", model->num_params()}, {"active_params", model->num_active_params()},
                    {"layers", c.num_layers},        {"kv_heads", c.num_kv_heads},
                    {"head_dim", c.head_dim},        {"mla", c.mla()}};
    out["hardware"] = nlohmann::json::parse(planner::hardware_to_json(*hw));
    out["max_devices"] = count;
    out["nodes"] = a.nodes;
    if (a.nodes > 1) {
      out["network"] = {{"name", network->name},
                        {"latency_us", network->latency_us},
                        {"bandwidth_gbs", network->bandwidth_gbs},
                        {"ring_latency", network->ring_latency}};
    }
    out["workload"] = {{"qps", w.qps},
                       {"input_len", w.input_len},
                       {"output_len", w.output_len},
                       {"p99_ttft_s", w.p99_ttft_s},
                       {"p99_tpot_s", w.p99_tpot_s},
                       {"price_per_hour", w.price_per_hour},
                       {"api_price_per_1m_tokens", w.api_price_per_1m_tokens},
                       {"clients", w.clients},
                       {"kv_cache_dtype", a.kv_cache_dtype}};
    out["plans"] = nlohmann::json::array();
    for (const auto& r : *rows)
      out["plans"].push_back(row_json(r));
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model     %s: %.2fB params (%.2fB active), %d layers, %d KV heads x %d%s\n",
              model->name.c_str(), model->num_params() / 1e9, model->num_active_params() / 1e9,
              c.num_layers, c.num_kv_heads, c.head_dim, c.mla() ? " (MLA latent cache)" : "");
  std::printf("hardware  %s: %s, up to %d per node", hw->name.c_str(), hw->description.c_str(),
              count);
  if (a.nodes > 1) {
    std::printf(", %d nodes on %s (%.3g us, %.3g GB/s)", a.nodes, network->name.c_str(),
                network->latency_us, network->bandwidth_gbs);
  }
  std::printf("\n");
  std::printf("workload  %.3g QPS, %lld in + %lld out tokens\n\n", w.qps,
              static_cast<long long>(w.input_len), static_cast<long long>(w.output_len));
  std::printf("%-5s %-3s %-3s %9s %10s %7s %10s %9s %9s %9s %8s %6s %8s %5s %11s %9s\n", "quant",
              "tp", "pp", "weights/d", "kv tokens", "seqs", "prefill/s", "ttft ms", "decode/s",
              "tpot ms", "comm ms", "batch", "qps/repl", "devs", "$/month", "$/1M tok");
  for (const auto& r : *rows) {
    std::printf("%-5s %-3d %-3d %8.1fG %10lld %7lld %10.0f %9.1f %9.1f %9.2f %8.3f ",
                r.quant.name.c_str(), r.tp, r.pp, r.weight_gb_per_device,
                static_cast<long long>(r.kv_tokens), static_cast<long long>(r.max_seqs),
                r.prefill_tps, r.ttft_s * 1e3, r.decode_tps, r.tpot_s * 1e3, r.decode_comm_s * 1e3);
    if (!r.fits) {
      std::printf("  (%s)\n", r.why_not.c_str());
    } else if (!r.meets_targets) {
      std::printf("  (misses the latency targets)\n");
    } else {
      std::printf("%6d %8.2f %5lld ", r.batch, r.capacity_qps, static_cast<long long>(r.devices));
      if (w.price_per_hour > 0) {
        std::printf("%11.0f %9.3f\n", r.monthly_cost, r.cost_per_1m_tokens);
      } else {
        std::printf("%11s %9s\n", "-", "-");
      }
    }
  }
  if (w.api_price_per_1m_tokens > 0 && !rows->empty()) {
    std::printf("\nAPI at %.3g per 1M tokens: %.0f per month\n", w.api_price_per_1m_tokens,
                rows->front().api_monthly_cost);
  }
  return 0;
}

}  // namespace

void register_plan(CLI::App& app, CommandAction& action) {
  CLI::App* cmd =
      app.add_subcommand("plan", "Capacity and cost: devices, replicas and price to serve a model");
  auto a = std::make_shared<PlanArgs>();
  cmd->add_option("-m,--model", a->model,
                  "GGUF file, HF directory, config.json or preset: " + planner::preset_names());
  cmd->add_option("--hardware", a->hardware,
                  "NAME[xN]: a100-40g, a100-80g, h100-sxm, h100-pcie, "
                  "h200, l40s, rtx-4090 (data/hardware.json) or cpu")
      ->capture_default_str();
  cmd->add_option("--hardware-file", a->hardware_file, "Replace the built-in hardware table");
  cmd->add_option("--nodes", a->nodes,
                  "Nodes of --hardware joined by --network (TP inside a node, PP across)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  cmd->add_option("--network", a->network,
                  "Between nodes: ib-ndr400 (GPU default) | 100gbe (cpu default) "
                  "(the hardware file's networks)");
  cmd->add_option("--pipeline-parallel-size", a->pipeline_parallel_size,
                  "Plan only this many pipeline stages (default: powers of two up to --nodes)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--calibration", a->calibration, "cpu: use this probe file, not a new probe");
  cmd->add_option("--calibrate", a->calibrate_out,
                  "Probe this machine and write the cpu entry (with -m: also the model's shapes)");
  cmd->add_option("--qps", a->w.qps, "Requests per second to serve")->capture_default_str();
  cmd->add_option("--input-len", a->w.input_len, "Prompt tokens per request")
      ->capture_default_str();
  cmd->add_option("--output-len", a->w.output_len, "Generated tokens per request")
      ->capture_default_str();
  cmd->add_option("--p99-ttft", a->w.p99_ttft_s, "p99 time to first token target, s (0: none)");
  cmd->add_option("--p99-tpot", a->w.p99_tpot_s, "p99 time per output token target, s (0: none)");
  cmd->add_option("--price-per-hour", a->w.price_per_hour, "Price of one device-hour");
  cmd->add_option("--api-price-per-1m-tokens", a->w.api_price_per_1m_tokens,
                  "API price per 1M tokens (input + output) to compare with");
  cmd->add_option("--clients", a->w.clients, "Closed-loop clients for the clients figure")
      ->capture_default_str();
  cmd->add_option("--max-num-seqs", a->w.max_num_seqs, "Engine batch limit")->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", a->w.max_batched_tokens, "Chunked-prefill budget")
      ->capture_default_str();
  cmd->add_option("--kv-cache-dtype", a->kv_cache_dtype, "f16 | bf16 | q8_0 | fp8 | f32")
      ->capture_default_str();
  cmd->add_option("--threads", a->threads, "cpu probe threads (default: all)");
  cmd->add_flag("--json", a->json, "Print JSON");
  cmd->callback([&action, a] { action = [a] { return run_plan(*a); }; });
}

}  // namespace pagoda::cli
