// pagoda bench: raw model speed on this machine (no scheduler, no HTTP). Measures prefill tok/s
// for a P-token prompt, single-sequence decode tok/s, aggregate decode tok/s with B sequences
// decoding together, the machine's read bandwidth, and decode as a percentage of the bandwidth
// roofline (bandwidth / bytes of weights read per token). Medians over repeats; the percentage is
// the median of each repeat's decode against the bandwidth measured just before it. On a MoE model,
// the expert weights a decode step reads at each batch size (bench_moe.h). Under `mpirun -np N`
// with --tensor-parallel-size T / --pipeline-parallel-size P (N = T x P) the model is split as
// `bench engine` and `serve` split it: rank 0 measures, the other ranks repeat its forward passes
// (run_as_parallel_worker); the JSON gives each rank's weight and KV cache bytes.
// `bench engine` and `bench serve` are its subcommands (bench_engine.cc, bench_serve.cc).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/kv_cache_sizing.h"
#include "api/parallel_backend.h"
#include "backend/kv_storage.h"
#include "cli/commands/bench_moe.h"
#include "cli/commands/commands.h"
#include "format/gguf_file.h"
#include "kernels/isa.h"
#include "kernels/matmul_observer.h"
#include "kernels/ops.h"
#include "loader/hf/hf_checkpoint.h"
#include "loader/model_loader.h"
#include "model/rank_memory.h"
#include "pagoda/parallel.h"
#include "planner/bandwidth_probe.h"
#include "planner/hardware.h"
#include "planner/parallel_cost.h"

namespace pagoda::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

using planner::BandwidthProbe;  // planner/bandwidth_probe.h

// Bytes of weights one decoded token reads: every tensor once, except the embedding table (one
// row) unless it doubles as the output projection, and only the used share of MoE experts.
// `path` is a GGUF file or a Hugging Face model directory.
Result<uint64_t> weight_bytes_per_token(const std::string& path, const model::ModelConfig& c) {
  struct Entry {
    std::string name;
    uint64_t bytes;
    bool expert;  // one expert's matrix, or experts stacked in one tensor
  };
  std::vector<Entry> entries;
  if (loader::HfCheckpoint::is_model_dir(path)) {
    PAGODA_ASSIGN_OR_RETURN(auto ckpt, loader::HfCheckpoint::open(path));
    for (const auto& t : ckpt->tensors())
      entries.push_back({t.gguf_name, t.size_bytes, t.expert >= 0});
  } else {
    PAGODA_ASSIGN_OR_RETURN(auto file, format::GgufFile::open(path));
    for (const auto& t : file->tensors()) {
      const std::string_view name = t.name;
      entries.push_back(
          {std::string(name), t.size_bytes, name.find("_exps.") != std::string_view::npos});
    }
  }
  uint64_t total = 0;
  for (const Entry& e : entries) {
    uint64_t bytes = e.bytes;
    if (e.name == "token_embd.weight" && !c.tied_embeddings) continue;
    if (c.num_experts > 0 && e.expert) {
      bytes =
          bytes / static_cast<uint64_t>(c.num_experts) * static_cast<uint64_t>(c.num_experts_used);
    }
    total += bytes;
  }
  return total;
}

// Runs `num_seqs` sequences of one prompt each, then `steps` decode steps with all of them in
// one batch. Returns {prefill seconds, decode seconds}.
struct Run {
  double prefill_s = 0, decode_s = 0;
};

// `decode_observer` (optional) watches the decode steps' matmuls.
Result<Run> run_once(model::Model& model, backend::KvStorage& kv, int32_t num_seqs,
                     int32_t prompt_len, int32_t steps, bool flash_attention, std::mt19937& rng,
                     kernels::MatmulObserver* decode_observer = nullptr) {
  const auto& c = model.config();
  const int32_t bs = kv.block_size();
  const int32_t max_len = prompt_len + steps;
  const int32_t blocks_per_seq = (max_len + bs - 1) / bs;
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(num_seqs));
  for (int32_t s = 0; s < num_seqs; ++s) {
    for (int32_t b = 0; b < blocks_per_seq; ++b)
      tables[static_cast<size_t>(s)].push_back(1 + s * blocks_per_seq + b);
  }
  std::uniform_int_distribution<int32_t> tok(0, c.vocab_size - 1);
  std::vector<float> logits;
  Run run;
  // Prefill: each sequence's prompt as one batch (the timed figure is the mean per sequence).
  for (int32_t s = 0; s < num_seqs; ++s) {
    std::vector<int32_t> tokens(static_cast<size_t>(prompt_len)), positions(tokens.size());
    for (auto& t : tokens)
      t = tok(rng);
    std::iota(positions.begin(), positions.end(), 0);
    model::SequenceSlice slice{0, prompt_len, tables[static_cast<size_t>(s)]};
    const int32_t last = prompt_len - 1;
    model::ForwardBatch batch{tokens, positions, {&slice, 1}, {&last, 1}, flash_attention,
                              {},     {},        nullptr,     {}};
    logits.resize(static_cast<size_t>(c.vocab_size));
    const auto t0 = Clock::now();
    PAGODA_RETURN_IF_ERROR(model.forward(batch, kv.layers(), logits.data()));
    run.prefill_s += seconds_since(t0) / num_seqs;
  }
  // Decode: every sequence advances one token per step.
  std::vector<int32_t> tokens(static_cast<size_t>(num_seqs)), positions(tokens.size()),
      rows(tokens.size());
  std::vector<model::SequenceSlice> slices(tokens.size());
  std::iota(rows.begin(), rows.end(), 0);
  logits.resize(static_cast<size_t>(num_seqs) * static_cast<size_t>(c.vocab_size));
  kernels::set_matmul_observer(decode_observer);
  const auto t0 = Clock::now();
  for (int32_t step = 0; step < steps; ++step) {
    for (int32_t s = 0; s < num_seqs; ++s) {
      tokens[static_cast<size_t>(s)] = tok(rng);
      positions[static_cast<size_t>(s)] = prompt_len + step;
      slices[static_cast<size_t>(s)] = {s, 1, tables[static_cast<size_t>(s)]};
    }
    model::ForwardBatch batch{tokens, positions, slices,  rows, flash_attention,
                              {},     {},        nullptr, {}};
    const Status status = model.forward(batch, kv.layers(), logits.data());
    if (!status.ok()) {
      kernels::set_matmul_observer(nullptr);
      return status;
    }
  }
  run.decode_s = seconds_since(t0);
  kernels::set_matmul_observer(nullptr);
  return run;
}

std::vector<int32_t> parse_list(const std::string& s) {
  std::vector<int32_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(std::stoi(item));
  }
  return out;
}

// The cost model of docs/design/parallel.md (planner/parallel_cost.h, the formulas `pagoda plan`
// uses) for this model's shape: the bytes each split moves per token per layer (pagoda's f32
// activations), the transport measured here (under mpirun -np N; null outside a job) and the
// communication time of one decode token (batch 1) they predict, here and on two reference
// clusters whose links come from the hardware table (data/hardware.json: h100-sxm's NVLink, the
// ib-ndr400 and 100gbe networks; assumed figures, not measured).
Result<nlohmann::json> parallel_cost_model(const model::ModelConfig& c, const TransportFigures& t) {
  constexpr double kActivationBytes = 4;
  // One decode token: TP's all-reduces and its logits row's all-gather; PP's stage hops.
  auto tp_ms = [&](const planner::Interconnect& link, int32_t n) {
    return planner::tensor_parallel_seconds(c, link, n, 1, 1, kActivationBytes) * 1e3;
  };
  auto pp_ms = [&](const planner::Interconnect& link, int32_t p) {
    return planner::pipeline_hops_seconds(c, link, p, 1, kActivationBytes) * 1e3;
  };
  const planner::CommBytes b = planner::comm_bytes(c, kActivationBytes);
  nlohmann::json j;
  j["bytes_per_token_per_layer"] = {
      {"tensor_parallel_all_reduce_payload", b.tensor_parallel_all_reduce_payload},
      {"pipeline_parallel_per_stage_boundary", b.pipeline_stage_boundary},
      {"expert_parallel_all_reduce_payload", b.expert_parallel_all_reduce_payload},
      {"expert_parallel_all_to_all_times_n_minus_1_over_n", b.expert_all_to_all}};
  j["tensor_parallel_vocab_all_gather_bytes_per_sampled_row_times_n_minus_1_over_n"] =
      b.vocab_all_gather;
  if (t.ranks > 1) {
    j["transport"] = {{"name", t.name},
                      {"ranks", t.ranks},
                      {"all_reduce_latency_us", t.all_reduce_latency_us},
                      {"all_reduce_bandwidth_gbs", t.all_reduce_bandwidth_gbs}};
    const planner::Interconnect here{t.name, t.all_reduce_latency_us, t.all_reduce_bandwidth_gbs,
                                     false};
    j["predicted_ms_per_decode_token"]["here_tensor_parallel"] = tp_ms(here, t.ranks);
    j["predicted_ms_per_decode_token"]["here_pipeline_parallel"] = pp_ms(here, t.ranks);
  } else {
    j["transport"] = nullptr;  // (run under mpirun -np N to measure it)
  }
  const std::string_view table = planner::builtin_hardware_json();
  PAGODA_ASSIGN_OR_RETURN(auto hardware, planner::parse_hardware_json(table));
  PAGODA_ASSIGN_OR_RETURN(auto networks, planner::parse_networks_json(table));
  const planner::HardwareSpec* gpu = planner::find_hardware(hardware, "h100-sxm");
  const planner::Interconnect* ib = planner::find_network(networks, "ib-ndr400");
  const planner::Interconnect* eth = planner::find_network(networks, "100gbe");
  if (gpu == nullptr || ib == nullptr || eth == nullptr) {
    return internal_error("the built-in hardware table lacks h100-sxm, ib-ndr400 or 100gbe");
  }
  auto& p = j["predicted_ms_per_decode_token"];
  p["2_nodes_x_8_gpus_nvlink_tp8_in_node"] = tp_ms(gpu->node_link(), 8);
  p["2_nodes_x_8_gpus_nvlink_pp2_across"] = pp_ms(*ib, 2);
  p["4_cpu_nodes_100gbe_tp4"] = tp_ms(*eth, 4);
  p["4_cpu_nodes_100gbe_pp4"] = pp_ms(*eth, 4);
  return j;
}

}  // namespace

void register_bench(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model, batches = "1,4,16";
    int32_t prompt_len = 512, gen_len = 128, threads = 0, repeats = 3;
    int32_t tensor_parallel_size = 1, pipeline_parallel_size = 1;
    bool json = false, flash_attn = false, expert_parallel = false;
    std::string kv_cache_dtype = "f16";
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = bench_group(app);
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-p,--n-prompt", opts->prompt_len, "Prompt tokens for the prefill test")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-n,--n-gen", opts->gen_len, "Decode steps per decode test")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--batch", opts->batches, "Comma-separated decode batch sizes");
  cmd->add_option("--threads", opts->threads, "Threads (default: all cores)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--repeats", opts->repeats, "Repeats per measurement (median reported)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "KV cache type: f16 | bf16 | q8_0 | f32");
  add_flash_attn_flag(cmd, opts->flash_attn);
  add_tensor_parallel_option(cmd, opts->tensor_parallel_size);
  add_pipeline_parallel_option(cmd, opts->pipeline_parallel_size);
  add_expert_parallel_flag(cmd, opts->expert_parallel);
  cmd->add_flag("--json", opts->json, "Print JSON");
  cmd->callback([cmd, opts, &action] {
    if (!cmd->get_subcommands().empty()) return;  // `bench engine` / `bench serve`
    action = [opts] {
      std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      const int32_t tp = opts->tensor_parallel_size, pp = opts->pipeline_parallel_size;
      // A split that does not fit the job fails on every rank before anything is measured.
      if (Status s = check_parallel_sizes(tp, pp); !s.ok()) return fail(s.message());
      // Under mpirun every rank measures the transport with rank 0 (the cost model's figures).
      // Then, with tp x pp > 1, the other ranks serve their shard or stage of the model (as
      // `bench engine` does); without, rank 0 alone runs the single-process benchmark.
      const TransportFigures transport = measure_transport();
      if (tp * pp > 1) {
        EngineConfig engine;
        engine.model_path = path;
        engine.tensor_parallel_size = tp;
        engine.pipeline_parallel_size = pp;
        engine.expert_parallel = opts->expert_parallel;
        engine.num_threads = opts->threads;
        if (auto worker = run_as_parallel_worker(engine)) return *worker;
      } else if (parallel_rank() != 0) {
        return 0;
      }
      std::vector<int32_t> batches;
      try {
        batches = parse_list(opts->batches);
      } catch (const std::exception&) {
        return fail("--batch must be a comma-separated list of positive integers");
      }
      if (batches.empty() || std::any_of(batches.begin(), batches.end(),
                                         [](int32_t b) { return b <= 0 || b > 4096; })) {
        return fail("--batch must be a comma-separated list of integers in [1, 4096]");
      }
      if (opts->threads > 0) kernels::set_num_threads(opts->threads);
      auto loaded = loader::load_model(path, api::model_backend(tp, pp, opts->expert_parallel));
      if (!loaded.ok()) return fail(loaded.status().message());
      model::Model& m = *loaded->model;
      const auto& c = m.config();
      if (opts->prompt_len + opts->gen_len > c.context_length) {
        return fail("prompt + generated tokens exceed the context length " +
                    std::to_string(c.context_length));
      }
      const int32_t max_batch = *std::max_element(batches.begin(), batches.end());
      const int32_t bs = 16;
      const int64_t blocks_per_seq = (opts->prompt_len + opts->gen_len + bs - 1) / bs;
      auto kv_dtype = api::parse_kv_cache_dtype(opts->kv_cache_dtype);
      if (!kv_dtype.ok()) return fail(kv_dtype.status().message());
      auto kv = backend::KvStorage::create(m.backend(), m.kv_layout(),
                                           1 + blocks_per_seq * max_batch, bs, *kv_dtype);
      if (!kv.ok()) return fail(kv.status().message());
      // Each rank's weights and part of this KV cache (its KV heads or its layers' blocks).
      auto memory = model::gather_rank_memory(m, *kv);
      if (!memory.ok()) return fail(memory.status().message());

      auto probe = BandwidthProbe::create();
      if (!probe.ok()) return fail("measuring memory bandwidth: " + probe.status().message());
      auto weight_bytes = weight_bytes_per_token(path, c);
      if (!weight_bytes.ok()) return fail(weight_bytes.status().message());
      const uint64_t bytes_per_token = *weight_bytes;
      std::mt19937 rng(1234);

      // Prefill of P tokens and single-sequence decode; each repeat's decode against the
      // bandwidth measured just before it (its share of that moment's roofline).
      std::vector<double> prefill, decode1, bandwidth, percent;
      for (int r = 0; r < opts->repeats; ++r) {
        const double gbs = probe->measure(3);
        auto run = run_once(m, *kv, 1, opts->prompt_len, opts->gen_len, opts->flash_attn, rng);
        if (!run.ok()) return fail(run.status().message());
        prefill.push_back(opts->prompt_len / run->prefill_s);
        decode1.push_back(opts->gen_len / run->decode_s);
        bandwidth.push_back(gbs);
        percent.push_back(100.0 * decode1.back() * static_cast<double>(bytes_per_token) /
                          (gbs * 1e9));
      }
      const double bw = median(bandwidth);
      const double roofline = bw * 1e9 / static_cast<double>(bytes_per_token);
      const double prefill_tps = median(prefill), decode_tps = median(decode1);
      nlohmann::json out;
      out["model"] = path;
      out["isa"] = std::string(kernels::isa_name(kernels::active_isa()));
      out["threads"] = kernels::num_threads();
      out["kv_cache_dtype"] = std::string(tensor::dtype_name(*kv_dtype));
      out["flash_attention"] = opts->flash_attn;
      out["tensor_parallel_size"] = tp;
      out["expert_parallel"] = opts->expert_parallel;
      out["pipeline_parallel_size"] = pp;
      nlohmann::json ranks = nlohmann::json::array();
      for (const model::RankMemory& r : *memory) {
        ranks.push_back({{"rank", r.rank},
                         {"weight_bytes", r.weight_bytes},
                         {"kv_cache_bytes", r.kv_cache_bytes}});
      }
      out["ranks"] = std::move(ranks);
      out["read_bandwidth_gbs"] = bw;
      out["weight_bytes_per_token"] = bytes_per_token;
      out["roofline_decode_tps"] = roofline;
      out["prefill"] = {{"prompt_tokens", opts->prompt_len}, {"tokens_per_second", prefill_tps}};
      out["decode"] = {{"tokens", opts->gen_len},
                       {"tokens_per_second", decode_tps},
                       {"percent_of_roofline", median(percent)}};
      nlohmann::json batched = nlohmann::json::array();
      for (int32_t b : batches) {
        std::vector<double> agg;
        for (int r = 0; r < opts->repeats; ++r) {
          // Short prompts: the batched test measures decode, not prefill.
          auto run = run_once(m, *kv, b, std::min(opts->prompt_len, 16), opts->gen_len,
                              opts->flash_attn, rng);
          if (!run.ok()) return fail(run.status().message());
          agg.push_back(static_cast<double>(b) * opts->gen_len / run->decode_s);
        }
        batched.push_back({{"batch", b}, {"aggregate_tokens_per_second", median(agg)}});
      }
      out["batched_decode"] = batched;
      // MoE: the expert weights a decode step reads at each batch size (untimed steps watched
      // by a matmul observer; bench_moe.h).
      nlohmann::json moe = nlohmann::json::array();
      for (int32_t b : c.num_experts > 0 ? batches : std::vector<int32_t>{}) {
        ExpertReadCounter counter;
        const int32_t steps = std::min(opts->gen_len, 8);
        auto run = run_once(m, *kv, b, std::min(opts->prompt_len, 16), steps, opts->flash_attn, rng,
                            &counter);
        if (!run.ok()) return fail(run.status().message());
        moe.push_back(expert_reads(c, b, steps, counter));
      }
      if (c.num_experts > 0) out["moe_expert_reads"] = moe;
      auto cost_model = parallel_cost_model(c, transport);
      if (!cost_model.ok()) return fail(cost_model.status().message());
      out["parallel_cost_model"] = std::move(*cost_model);
      if (opts->json) {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
      }
      std::printf("model      %s (%s, %d threads)\n", path.c_str(),
                  out["isa"].get<std::string>().c_str(), kernels::num_threads());
      if (tp * pp > 1) {
        std::printf("split      tensor parallel %d x pipeline parallel %d\n", tp, pp);
      }
      for (const model::RankMemory& r : *memory) {
        std::printf("rank %-5d %.1f MiB of weights, %.1f MiB of KV cache\n", r.rank,
                    static_cast<double>(r.weight_bytes) / (1 << 20),
                    static_cast<double>(r.kv_cache_bytes) / (1 << 20));
      }
      std::printf("bandwidth  %.1f GB/s read; %.1f MB of weights per token; roofline %.1f tok/s\n",
                  bw, static_cast<double>(bytes_per_token) / 1e6, roofline);
      std::printf("prefill    %d tokens: %.1f tok/s\n", opts->prompt_len, prefill_tps);
      std::printf("decode     %.1f tok/s (%.0f%% of roofline)\n", decode_tps, median(percent));
      for (const auto& e : batched) {
        std::printf("batch %4d %.1f tok/s aggregate\n", e["batch"].get<int>(),
                    e["aggregate_tokens_per_second"].get<double>());
      }
      for (const auto& e : moe) {
        std::printf(
            "experts    batch %d: %.1f of %d experts per layer, %.1f MB of expert weights per "
            "step (token by token %.1f MB, all experts %.1f MB)\n",
            e["batch"].get<int>(), e["experts_run_per_layer_per_step"].get<double>(), c.num_experts,
            e["expert_weight_bytes_per_step"].get<double>() / 1e6,
            e["expert_weight_bytes_token_by_token"].get<double>() / 1e6,
            e["expert_weight_bytes_all_experts"].get<double>() / 1e6);
      }
      return 0;
    };
  });
}

}  // namespace pagoda::cli
