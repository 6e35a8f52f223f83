// pagoda bench engine: offline throughput of the serving engine (no HTTP). Keeps `concurrency`
// requests in flight until `num_requests` have finished; prompts are random token ids from a
// fixed seed (optionally all starting with the same `shared_prefix` tokens; with --tenants N the
// requests take turns over N cache salts, as N API keys under prefix-cache isolation) and every
// request generates exactly `output_len` tokens (ignore_eos). With --range-ratio R each request's
// input and output lengths are drawn uniformly from [L(1-R), L(1+R)] (a mixed-length load, like
// vLLM's benchmark --random-range-ratio). Reports requests/s, output and total
// tokens/s, TTFT and TPOT percentiles, KV utilisation (mean blocks in use over steps and the fill
// ratio live tokens / (blocks in use x block size)), prefix-cache hit rate, preemptions, and the
// process's context switches per engine step (a handful when the compute threads spin between
// parallel regions as they should; hundreds when they sleep and wake in every region).
// With --lora NAME=PATH ... request i runs adapter i mod their count; --lora-compare N then runs
// N rounds of the load without adapters and with them (ABBA order; each round's prompts fresh,
// the same for both of its runs, which never share prefix-cache blocks) on one engine and
// reports each round's output tok/s and the median ratio with / without (the LoRA overhead).
// --json-schema FILE constrains every request to that schema (structured output's cost at
// batch size: compare with the same run without it; pick a schema whose text does not end
// within output_len tokens, e.g. a long array, or the masks after its end are trivially EOS).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "cli/lora_options.h"
#include "pagoda/engine.h"

namespace pagoda::cli {
namespace {

// Voluntary + involuntary context switches of every thread of this process so far.
int64_t context_switches() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return 0;
  return static_cast<int64_t>(u.ru_nvcsw) + static_cast<int64_t>(u.ru_nivcsw);
}

struct BenchOpts {
  std::string model;
  int32_t num_requests = 64;
  int32_t concurrency = 8;
  int32_t input_len = 128;
  int32_t output_len = 64;
  int32_t shared_prefix = 0;
  int32_t tenants = 1;  // requests round-robin over this many cache salts (isolated tenants)
  double range_ratio = 0;
  bool json = false;
  uint64_t seed = 0;
  float temperature = 0.0f;
  int32_t block_size = 16;
  double kv_cache_mib = 0;
  int32_t max_num_seqs = 0;
  int32_t max_num_batched_tokens = 512;
  bool no_prefix_caching = false;
  bool keep_window_blocks = false;  // keep the blocks behind a sliding window (comparison)
  bool no_warmup = false;
  int32_t threads = 0;
  std::string kv_cache_dtype = "f16";
  bool flash_attn = false;
  std::string json_schema_file;
  std::string prompt_file;
  SpeculativeConfig speculative;
  LoraOptions lora;          // with adapters, request i runs adapter i % (number of adapters)
  int32_t lora_compare = 0;  // > 0: rounds of no adapter vs adapters (needs --lora)
  int32_t tensor_parallel_size = 1;
  int32_t pipeline_parallel_size = 1;
  bool expert_parallel = false;
  int32_t beam_width = 0;  // > 0: the beam-search KV comparison (bench_beam.cc) instead
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  // Nearest rank.
  const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

int run_bench(const BenchOpts& o) {
  if (o.shared_prefix > o.input_len) return fail("--shared-prefix must be <= --input-len");
  EngineConfig cfg;
  cfg.model_path = o.model.empty() ? default_model_path() : o.model;
  if (cfg.model_path.empty()) return fail("no model given (-m) and no bundled model found");
  cfg.block_size = o.block_size;
  cfg.kv_cache_bytes = static_cast<uint64_t>(o.kv_cache_mib * 1024 * 1024);
  cfg.kv_cache_dtype = o.kv_cache_dtype;
  cfg.flash_attention = o.flash_attn;
  cfg.max_num_seqs = o.max_num_seqs > 0 ? o.max_num_seqs : o.concurrency;
  cfg.max_num_batched_tokens = std::max(o.max_num_batched_tokens, cfg.max_num_seqs);
  cfg.max_queue = 0;
  cfg.enable_prefix_caching = !o.no_prefix_caching;
  cfg.release_blocks_outside_window = !o.keep_window_blocks;
  cfg.warm_up = !o.no_warmup;
  cfg.num_threads = o.threads;
  cfg.speculative = o.speculative;
  if (const std::string err = apply_lora_options(o.lora, cfg); !err.empty()) return fail(err);
  cfg.tensor_parallel_size = o.tensor_parallel_size;
  cfg.pipeline_parallel_size = o.pipeline_parallel_size;
  cfg.expert_parallel = o.expert_parallel;
  if (auto worker = run_as_parallel_worker(cfg)) return *worker;
  if (o.beam_width > 0) {
    return run_bench_beam(cfg, o.beam_width, o.input_len, o.output_len, o.seed, o.json);
  }
  StructuredOutputs constraint;
  if (!o.json_schema_file.empty()) {
    std::ifstream in(o.json_schema_file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) return fail("--json-schema: cannot read " + o.json_schema_file);
    constraint.kind = StructuredOutputs::Kind::kJsonSchema;
    constraint.spec = text.str();
  }
  auto created = Engine::create(cfg);
  if (!created.ok()) return fail(created.status().message());
  Engine& engine = **created;
  const ModelInfo& info = engine.model_info();
  // Lengths of each request: [L(1-R), L(1+R)], at least 1 (inputs: at least the shared prefix).
  const auto span_of = [&](int32_t len, int32_t floor) {
    const auto lo = std::max<int32_t>(floor, static_cast<int32_t>(len * (1.0 - o.range_ratio)));
    const auto hi = std::max<int32_t>(lo, static_cast<int32_t>(len * (1.0 + o.range_ratio)));
    return std::pair<int32_t, int32_t>{lo, hi};
  };
  const auto [in_lo, in_hi] = span_of(o.input_len, std::max<int32_t>(1, o.shared_prefix));
  const auto [out_lo, out_hi] = span_of(o.output_len, 1);
  if (in_hi + out_hi > info.context_length) {
    return fail("--input-len + --output-len exceeds the context length (" +
                std::to_string(info.context_length) + ")");
  }

  // Prompts: random ids, skipping end-of-generation / control tokens (detected by detokenizing
  // to nothing), the same first shared_prefix tokens for all.
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int32_t> dist(0, info.vocab_size - 1);
  const auto draw = [&] {
    while (true) {
      const int32_t t = dist(rng);
      if (!engine.detokenize({t}).empty()) return t;
    }
  };
  std::vector<int32_t> prefix;
  for (int32_t i = 0; i < o.shared_prefix; ++i)
    prefix.push_back(draw());
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> output_lens;
  std::uniform_int_distribution<int32_t> in_len(in_lo, in_hi), out_len(out_lo, out_hi);
  std::vector<int32_t> file_prompt;
  if (!o.prompt_file.empty()) {
    std::ifstream in(o.prompt_file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) return fail("--prompt-file: cannot read " + o.prompt_file);
    file_prompt = engine.tokenize(text.str(), /*add_special=*/true, /*parse_special=*/false);
    if (static_cast<int64_t>(file_prompt.size()) + out_hi > info.context_length) {
      return fail("--prompt-file + --output-len exceeds the context length");
    }
  }
  for (int32_t r = 0; r < o.num_requests; ++r) {
    std::vector<int32_t> p = prefix;
    const int32_t n = in_len(rng);
    while (static_cast<int32_t>(p.size()) < n)
      p.push_back(draw());
    if (!file_prompt.empty()) p = file_prompt;
    prompts.push_back(std::move(p));
    output_lens.push_back(out_len(rng));
  }

  // Runs the load (every prompt, `concurrency` in flight) and returns its finished outputs.
  struct LoadRun {
    std::vector<RequestOutput> finals;
    double elapsed = 0;
    std::string error;  // the first failure
  };
  const auto run_load = [&](const std::vector<std::vector<int32_t>>& load_prompts,
                            bool with_lora) -> LoadRun {
    std::mutex mu;
    std::condition_variable cv;
    LoadRun run;
    const auto start = std::chrono::steady_clock::now();
    int32_t submitted = 0;
    int32_t in_flight = 0;
    while (true) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] {
        return in_flight < o.concurrency ||
               static_cast<int32_t>(run.finals.size()) == o.num_requests;
      });
      if (static_cast<int32_t>(run.finals.size()) == o.num_requests) break;
      if (submitted == o.num_requests) {
        cv.wait(lock, [&] { return static_cast<int32_t>(run.finals.size()) == o.num_requests; });
        break;
      }
      GenerateRequest req;
      req.request_id = "bench-" + std::to_string(submitted);
      req.prompt_tokens = load_prompts[static_cast<size_t>(submitted)];
      req.stop.max_tokens = output_lens[static_cast<size_t>(submitted)];
      req.stop.ignore_eos = true;
      req.sampling.temperature = o.temperature;
      req.sampling.seed = o.seed + static_cast<uint64_t>(submitted);
      req.sampling.structured = constraint;
      // Tenant isolation as `serve --prefix-cache-isolation api-key` does it: one salt per key.
      if (o.tenants > 1) req.cache_salt = "tenant-" + std::to_string(submitted % o.tenants);
      if (with_lora && !cfg.lora_adapters.empty()) {
        req.lora_name =
            cfg.lora_adapters[static_cast<size_t>(submitted) % cfg.lora_adapters.size()].name;
      }
      ++submitted;
      ++in_flight;
      lock.unlock();
      const Status st = engine.add_request(std::move(req), [&](RequestOutput out) {
        if (!out.finished) return;
        std::lock_guard<std::mutex> l(mu);
        if (out.finish_reason == FinishReason::kError && run.error.empty()) run.error = out.error;
        run.finals.push_back(std::move(out));
        --in_flight;
        cv.notify_all();
      });
      if (!st.ok()) {
        engine.shutdown();  // the callbacks reference this frame
        run.error = "add_request: " + st.message();
        return run;
      }
    }
    run.elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return run;
  };
  if (o.lora_compare > 0) {
    if (cfg.lora_adapters.empty()) return fail("--lora-compare needs --lora adapters");
    std::vector<double> base_tps, lora_tps, ratios;
    for (int32_t round = 0; round < o.lora_compare; ++round) {
      if (round > 0 && file_prompt.empty()) {  // fresh ids after the shared prefix
        for (std::vector<int32_t>& p : prompts) {
          for (size_t i = prefix.size(); i < p.size(); ++i)
            p[i] = draw();
        }
      }
      double tps[2] = {0, 0};
      for (int i = 0; i < 2; ++i) {
        const int with = (i + round) % 2;  // ABBA order: a drifting machine load biases neither
        const LoadRun run = run_load(prompts, with == 1);
        if (!run.error.empty()) {
          engine.shutdown();
          return fail("a request failed: " + run.error);
        }
        int64_t tokens = 0;
        for (const RequestOutput& f : run.finals)
          tokens += f.usage.completion_tokens;
        tps[with] = static_cast<double>(tokens) / std::max(run.elapsed, 1e-9);
      }
      base_tps.push_back(tps[0]);
      lora_tps.push_back(tps[1]);
      ratios.push_back(tps[1] / std::max(tps[0], 1e-9));
      if (!o.json) {
        std::printf("round %d: no adapter %.1f output tok/s, %zu adapters %.1f (%.3fx)\n",
                    round + 1, tps[0], cfg.lora_adapters.size(), tps[1], ratios.back());
      }
    }
    engine.shutdown();
    const double median = percentile(ratios, 50);
    nlohmann::ordered_json j;
    j["model"] = info.id;
    j["num_requests"] = o.num_requests;
    j["concurrency"] = o.concurrency;
    j["input_len"] = o.input_len;
    j["output_len"] = o.output_len;
    j["num_adapters"] = cfg.lora_adapters.size();
    j["base_output_tokens_per_s"] = base_tps;
    j["lora_output_tokens_per_s"] = lora_tps;
    j["ratios"] = ratios;
    j["median_ratio"] = median;
    if (o.json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::printf("median ratio with / without adapters: %.3fx over %d rounds\n", median,
                  o.lora_compare);
    }
    return 0;
  }

  const EngineStats before = engine.stats();
  const int64_t switches_before = context_switches();
  LoadRun run = run_load(prompts, true);
  const double elapsed = run.elapsed;
  const std::vector<RequestOutput>& finals = run.finals;
  const EngineStats after = engine.stats();
  const int64_t switches = context_switches() - switches_before;
  engine.shutdown();
  if (!run.error.empty()) return fail("a request failed: " + run.error);

  int64_t prompt_tokens = 0, output_tokens = 0;
  std::vector<double> ttft, tpot, e2e;
  for (const RequestOutput& f : finals) {
    prompt_tokens += f.usage.prompt_tokens;
    output_tokens += f.usage.completion_tokens;
    ttft.push_back(f.timings.ttft_seconds * 1e3);
    if (f.usage.completion_tokens > 1) tpot.push_back(f.timings.mean_tpot_seconds * 1e3);
    e2e.push_back(f.timings.e2e_seconds * 1e3);
  }
  const int64_t steps = after.num_steps - before.num_steps;
  const double used = static_cast<double>(after.sum_used_blocks - before.sum_used_blocks);
  const double live = static_cast<double>(after.sum_live_tokens - before.sum_live_tokens);
  const double mean_blocks = steps > 0 ? used / static_cast<double>(steps) : 0;
  const double fill = used > 0 ? live / (used * after.block_size) : 0;
  const double queries =
      static_cast<double>(after.prefix_cache_queries - before.prefix_cache_queries);
  const double hits = static_cast<double>(after.prefix_cache_hits - before.prefix_cache_hits);
  const double hit_rate = queries > 0 ? hits / queries : 0;
  const double switches_per_step =
      steps > 0 ? static_cast<double>(switches) / static_cast<double>(steps) : 0;

  nlohmann::ordered_json j;
  j["model"] = info.id;
  j["num_requests"] = o.num_requests;
  j["concurrency"] = o.concurrency;
  j["input_len"] = o.input_len;
  j["output_len"] = o.output_len;
  j["shared_prefix"] = o.shared_prefix;
  j["tenants"] = o.tenants;
  j["range_ratio"] = o.range_ratio;
  j["json_schema"] = o.json_schema_file;
  j["elapsed_s"] = elapsed;
  j["requests_per_s"] = o.num_requests / elapsed;
  j["output_tokens_per_s"] = static_cast<double>(output_tokens) / elapsed;
  j["total_tokens_per_s"] = static_cast<double>(prompt_tokens + output_tokens) / elapsed;
  j["ttft_ms"] = {
      {"p50", percentile(ttft, 50)}, {"p90", percentile(ttft, 90)}, {"p99", percentile(ttft, 99)}};
  j["tpot_ms"] = {
      {"p50", percentile(tpot, 50)}, {"p90", percentile(tpot, 90)}, {"p99", percentile(tpot, 99)}};
  j["e2e_ms"] = {{"p50", percentile(e2e, 50)}, {"p99", percentile(e2e, 99)}};
  j["kv_blocks"] = after.num_blocks;
  j["block_size"] = after.block_size;
  j["kv_bytes_per_token"] = after.kv_bytes_per_token;
  if (after.kv_bytes_per_token_mha > 0) j["kv_bytes_per_token_mha"] = after.kv_bytes_per_token_mha;
  j["kv_mean_blocks_in_use"] = mean_blocks;
  j["kv_peak_blocks_in_use"] = after.peak_used_blocks;
  j["kv_fill_ratio"] = fill;
  j["prefix_cache_hit_rate"] = hit_rate;
  j["preemptions"] = after.num_preemptions - before.num_preemptions;
  j["steps"] = steps;
  j["context_switches_per_step"] = switches_per_step;
  const double drafts =
      static_cast<double>(after.spec_decode_num_drafts - before.spec_decode_num_drafts);
  const double draft_tokens =
      static_cast<double>(after.spec_decode_num_draft_tokens - before.spec_decode_num_draft_tokens);
  const double accepted = static_cast<double>(after.spec_decode_num_accepted_tokens -
                                              before.spec_decode_num_accepted_tokens);
  j["speculative"] = o.speculative.method;
  j["spec_decode_num_drafts"] = drafts;
  j["spec_decode_num_draft_tokens"] = draft_tokens;
  j["spec_decode_num_accepted_tokens"] = accepted;
  // vLLM's definitions: accepted / drafted tokens; tokens per verifying step (1 + accepted / runs).
  j["spec_decode_acceptance_rate"] = draft_tokens > 0 ? accepted / draft_tokens : 0.0;
  j["spec_decode_mean_accepted_length"] = drafts > 0 ? 1.0 + accepted / drafts : 0.0;
  if (o.json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf(
      "model %s: %d requests, concurrency %d, input %d (shared prefix %d, %d tenant(s)), output "
      "%d\n",
      info.id.c_str(), o.num_requests, o.concurrency, o.input_len, o.shared_prefix, o.tenants,
      o.output_len);
  std::printf("elapsed           %.2f s (%lld steps)\n", elapsed, static_cast<long long>(steps));
  std::printf("throughput        %.2f req/s, %.1f output tok/s, %.1f total tok/s\n",
              o.num_requests / elapsed, static_cast<double>(output_tokens) / elapsed,
              static_cast<double>(prompt_tokens + output_tokens) / elapsed);
  std::printf("TTFT ms           p50 %.1f  p90 %.1f  p99 %.1f\n", percentile(ttft, 50),
              percentile(ttft, 90), percentile(ttft, 99));
  std::printf("TPOT ms           p50 %.2f  p90 %.2f  p99 %.2f\n", percentile(tpot, 50),
              percentile(tpot, 90), percentile(tpot, 99));
  std::printf("KV cache          %lld blocks of %d; mean in use %.1f, peak %lld; fill ratio %.3f\n",
              static_cast<long long>(after.num_blocks), after.block_size, mean_blocks,
              static_cast<long long>(after.peak_used_blocks), fill);
  std::printf("KV bytes/token    %.0f", after.kv_bytes_per_token);
  if (after.kv_bytes_per_token_mha > 0) {
    std::printf(" (MLA latent; the equivalent MHA cache: %.0f, %.1fx)",
                after.kv_bytes_per_token_mha,
                after.kv_bytes_per_token_mha / after.kv_bytes_per_token);
  }
  std::printf("\n");
  std::printf("prefix cache      hit rate %.3f (%.0f of %.0f tokens)\n", hit_rate, hits, queries);
  std::printf("preemptions       %lld\n",
              static_cast<long long>(after.num_preemptions - before.num_preemptions));
  std::printf("context switches  %.1f per step\n", switches_per_step);
  return 0;
}

}  // namespace

void register_bench_engine(CLI::App& app, CommandAction& action) {
  CLI::App* bench = bench_group(app);
  auto o = std::make_shared<BenchOpts>();
  CLI::App* cmd = bench->add_subcommand("engine", "Offline engine throughput and latency");
  cmd->add_option("-m,--model", o->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("--num-requests", o->num_requests, "Requests to run")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--concurrency", o->concurrency, "Requests in flight")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--input-len", o->input_len, "Prompt tokens")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--output-len", o->output_len, "Generated tokens per request")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--shared-prefix", o->shared_prefix, "Leading prompt tokens shared by all")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--tenants", o->tenants,
                  "Isolated tenants: requests take turns over this many cache salts, as "
                  "different API keys do under --prefix-cache-isolation api-key")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--range-ratio", o->range_ratio,
                  "Mixed lengths: input/output lengths uniform in [L(1-R), L(1+R)]")
      ->check(CLI::Range(0.0, 0.99));
  cmd->add_flag("--json", o->json, "Print the results as JSON");
  cmd->add_option("--beam-width", o->beam_width,
                  "Instead: peak KV blocks of one beam-search request of this width vs as many "
                  "independent sequences (--input-len, --output-len)")
      ->check(CLI::Range(1, BeamSearchParams::kMaxBeamWidth));
  cmd->add_option("--json-schema", o->json_schema_file,
                  "Constrain every request's output to this JSON Schema (file)");
  cmd->add_option("--seed", o->seed, "Seed for prompts and sampling");
  cmd->add_option("--temperature", o->temperature, "Sampling temperature (0 = greedy)")
      ->check(CLI::Range(0.0f, 100.0f));
  cmd->add_option("--block-size", o->block_size, "KV block size")->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-cache-mib", o->kv_cache_mib,
                  "KV cache size in MiB (default: a fraction of available RAM)")
      ->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--kv-cache-dtype", o->kv_cache_dtype, "f16 | bf16 | q8_0 | f32");
  add_flash_attn_flag(cmd, o->flash_attn);
  add_speculative_options(cmd, o->speculative);
  cmd->add_option("--prompt-file", o->prompt_file,
                  "Every request's prompt is this file's text (e.g. a copy-heavy workload for "
                  "--speculative-ngram); replaces --input-len");
  cmd->add_option("--max-num-seqs", o->max_num_seqs, "Running sequences (default: concurrency)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--max-num-batched-tokens", o->max_num_batched_tokens, "Tokens per step")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--no-prefix-caching", o->no_prefix_caching, "Disable prefix caching");
  cmd->add_flag("--keep-window-blocks", o->keep_window_blocks,
                "Keep the KV blocks behind a sliding window every layer uses (by default they "
                "return to the pool while a request runs)");
  cmd->add_flag("--no-warmup", o->no_warmup,
                "Skip the engine's warm-up forward pass (measure a cold start)");
  add_lora_options(cmd, o->lora);
  cmd->add_option("--lora-compare", o->lora_compare,
                  "With --lora: this many alternating rounds of the load without and with the "
                  "adapters; prints the throughput ratio (median)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("-t,--threads", o->threads, "Kernel threads (default: all cores)")
      ->check(CLI::Range(0, 4096));
  add_tensor_parallel_option(cmd, o->tensor_parallel_size);
  add_pipeline_parallel_option(cmd, o->pipeline_parallel_size);
  add_expert_parallel_flag(cmd, o->expert_parallel);
  cmd->callback([o, &action] { action = [o] { return run_bench(*o); }; });
}

}  // namespace pagoda::cli
