// pagoda bench engine --beam-width W: the KV memory beam search saves by sharing blocks
// copy-on-write. One beam-search request (width W, ignore_eos, --output-len tokens) on a random
// --input-len-token prompt, then W independent greedy requests on the same prompt, each with its
// own cache salt (nothing shared), each phase on a fresh engine. Reports the KV blocks in use at
// peak (after a step's scheduling) of each and their ratio: a count, not a timing.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/commands/commands.h"
#include "pagoda/engine.h"

namespace pagoda::cli {

namespace {

struct Phase {
  int64_t peak_blocks = 0;
  double elapsed_s = 0;
  std::string error;
};

// Runs `requests` at once on a fresh engine; returns its peak blocks in use.
Phase run_phase(const EngineConfig& cfg, std::vector<GenerateRequest> requests) {
  Phase ph;
  auto created = Engine::create(cfg);
  if (!created.ok()) {
    ph.error = created.status().message();
    return ph;
  }
  Engine& engine = **created;
  std::mutex mu;
  std::condition_variable cv;
  int32_t want = 0, finals = 0;
  const auto start = std::chrono::steady_clock::now();
  for (GenerateRequest& r : requests) {
    want += r.n;
    const Status st = engine.add_request(std::move(r), [&](RequestOutput out) {
      if (!out.finished) return;
      std::lock_guard<std::mutex> l(mu);
      if (out.finish_reason == FinishReason::kError && ph.error.empty()) ph.error = out.error;
      ++finals;
      cv.notify_all();
    });
    if (!st.ok()) {
      engine.shutdown();
      ph.error = st.message();
      return ph;
    }
  }
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return finals == want; });
  }
  ph.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ph.peak_blocks = engine.stats().peak_used_blocks;
  engine.shutdown();
  return ph;
}

}  // namespace

int run_bench_beam(EngineConfig cfg, int32_t beam_width, int32_t input_len, int32_t output_len,
                   uint64_t seed, bool json) {
  if (beam_width < 1 || beam_width > BeamSearchParams::kMaxBeamWidth) {
    return fail("--beam-width must be in [1, " + std::to_string(BeamSearchParams::kMaxBeamWidth) +
                "]");
  }
  cfg.max_num_seqs = std::max(cfg.max_num_seqs, beam_width);
  cfg.max_num_batched_tokens = std::max(cfg.max_num_batched_tokens, cfg.max_num_seqs);
  std::vector<int32_t> prompt;
  {
    // Random ids that detokenize to something (no control tokens), from --seed.
    auto created = Engine::create(cfg);
    if (!created.ok()) return fail(created.status().message());
    Engine& engine = **created;
    if (input_len + output_len > engine.model_info().context_length) {
      return fail("--input-len + --output-len exceeds the context length");
    }
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int32_t> dist(0, engine.model_info().vocab_size - 1);
    while (static_cast<int32_t>(prompt.size()) < input_len) {
      const int32_t t = dist(rng);
      if (!engine.detokenize({t}).empty()) prompt.push_back(t);
    }
    engine.shutdown();
  }
  GenerateRequest base;
  base.prompt_tokens = prompt;
  base.sampling.temperature = 0.0f;
  base.stop.max_tokens = output_len;
  base.stop.ignore_eos = true;

  GenerateRequest beam = base;
  beam.request_id = "beam";
  beam.beam_search = BeamSearchParams{};
  beam.beam_search->beam_width = beam_width;
  std::vector<GenerateRequest> beam_reqs;
  beam_reqs.push_back(std::move(beam));
  const Phase b = run_phase(cfg, std::move(beam_reqs));
  if (!b.error.empty()) return fail("beam request: " + b.error);

  std::vector<GenerateRequest> independent;
  for (int32_t i = 0; i < beam_width; ++i) {
    GenerateRequest r = base;
    r.request_id = "seq-" + std::to_string(i);
    r.cache_salt = "independent-" + std::to_string(i);
    independent.push_back(std::move(r));
  }
  const Phase ind = run_phase(cfg, std::move(independent));
  if (!ind.error.empty()) return fail("independent requests: " + ind.error);

  const double ratio = ind.peak_blocks > 0 ? static_cast<double>(b.peak_blocks) /
                                                 static_cast<double>(ind.peak_blocks)
                                           : 0.0;
  if (json) {
    nlohmann::ordered_json j;
    j["beam_width"] = beam_width;
    j["input_len"] = input_len;
    j["output_len"] = output_len;
    j["block_size"] = cfg.block_size;
    j["beam_peak_kv_blocks"] = b.peak_blocks;
    j["independent_peak_kv_blocks"] = ind.peak_blocks;
    j["beam_kv_blocks_ratio"] = ratio;
    j["beam_elapsed_s"] = b.elapsed_s;
    j["independent_elapsed_s"] = ind.elapsed_s;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("beam search, width %d: prompt %d tokens, output %d tokens, block size %d\n",
              beam_width, input_len, output_len, cfg.block_size);
  std::printf("KV blocks at peak  beam request %lld; %d independent sequences %lld (%.1f%%)\n",
              static_cast<long long>(b.peak_blocks), beam_width,
              static_cast<long long>(ind.peak_blocks), 100.0 * ratio);
  return 0;
}

}  // namespace pagoda::cli
