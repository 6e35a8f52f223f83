// The public Engine on real models (the fixture llama-Q8_0.gguf: 2 layers, Llama-2 vocab; and
// each architecture of models/arch/: phi3's fused weights, gemma2's 26 layers with an 8-token
// sliding window on every other layer, which prompts, chunks and the cached prefix all cross,
// qwen2moe's experts and deepseek2's latent attention): every one of 32 concurrent requests of
// mixed lengths produces exactly the tokens it produces when run alone — with prefix caching on and
// off, with chunked prefill under a small token budget, and with a KV cache so small that requests
// get preempted (and recomputed). Requests are greedy, n = 3 greedy (every sample must equal the
// solo greedy run) and seeded random sampling (each request's RNG must not depend on the batch).
// Also: prefix caching cuts the prompt tokens the model computes for shared prefixes, and aborting
// frees every block.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <random>

#include "pagoda/engine.h"
#include "test_support.h"

namespace pagoda {
namespace {

// A model of the fixtures (path under models/) and its KV shape (for the preemption test's
// cache size).
struct ModelCase {
  std::string file;
  int64_t layers = 0;
  int64_t kv_values = 0;  // cached values per token and layer: 2 (K, V) x KV heads x head dim
};

// deepseek2 caches its MLA latent: rope key 16 + kv_lora_rank 64 values (its 4 heads' K and V
// would be 4 x (48 + 48)); a cache sized for per-head K/V would hold ~5x too many blocks here.
const ModelCase kModels[] = {{"llama-Q8_0.gguf", 2, 256},
                             {"arch/phi3-Q8_0.gguf", 2, 256},
                             {"arch/gemma2-Q8_0.gguf", 26, 128},
                             {"arch/qwen2moe-Q8_0.gguf", 2, 256},
                             {"arch/deepseek2-Q8_0.gguf", 3, 80}};

struct Spec {
  std::string id;
  std::vector<int32_t> prompt;
  int32_t max_tokens = 8;
  int32_t n = 1;
  std::optional<uint64_t> seed;  // set: temperature 0.8 sampling
};

// 32 requests: prompt lengths 1..~150, some sharing a 48-token prefix, max_tokens 1..24.
std::vector<Spec> make_specs() {
  std::mt19937 rng(2024);
  std::uniform_int_distribution<int32_t> token(3, 31999);  // no <unk>/<s>/</s>
  std::vector<int32_t> shared;
  for (int i = 0; i < 48; ++i)
    shared.push_back(token(rng));
  std::vector<Spec> specs;
  for (int i = 0; i < 32; ++i) {
    Spec s;
    s.id = "req-" + std::to_string(i);
    s.prompt.push_back(1);  // BOS
    if (i % 4 == 1) s.prompt.insert(s.prompt.end(), shared.begin(), shared.end());
    const int len = i % 7 == 0 ? static_cast<int>(rng() % 4) : static_cast<int>(rng() % 100);
    for (int k = 0; k < len; ++k)
      s.prompt.push_back(token(rng));
    s.max_tokens = 1 + static_cast<int32_t>(rng() % 24);
    if (i % 8 == 3) s.n = 3;
    if (i % 8 == 5) s.seed = 1000 + static_cast<uint64_t>(i);
    specs.push_back(std::move(s));
  }
  return specs;
}

GenerateRequest to_request(const Spec& s) {
  GenerateRequest r;
  r.request_id = s.id;
  r.prompt_tokens = s.prompt;
  r.stop.max_tokens = s.max_tokens;
  r.stop.ignore_eos = true;  // fixed lengths: every run generates the same number of tokens
  r.n = s.n;
  if (s.seed) {
    r.sampling.temperature = 0.8f;
    r.sampling.top_k = 40;
    r.sampling.seed = s.seed;
  } else {
    r.sampling.temperature = 0.0f;
  }
  return r;
}

// Outputs per (request id, sample index), collected from the engine thread.
class Sink {
 public:
  OutputCallback callback() {
    return [this](RequestOutput o) {
      std::lock_guard<std::mutex> l(mu_);
      auto& seq = seqs_[{o.request_id, o.index}];
      seq.tokens.insert(seq.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      seq.text += o.text_delta;
      if (o.finished) {
        ++seq.finals;
        seq.final_output = o;
        ++num_finals_;
        cv_.notify_all();
      }
    };
  }
  struct Seq {
    std::vector<int32_t> tokens;
    std::string text;
    int finals = 0;
    RequestOutput final_output;
  };
  bool wait(int64_t finals) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::minutes(5), [&] { return num_finals_ >= finals; });
  }
  std::map<std::pair<std::string, int32_t>, Seq> seqs() {
    std::lock_guard<std::mutex> l(mu_);
    return seqs_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<std::string, int32_t>, Seq> seqs_;
  int64_t num_finals_ = 0;
};

EngineConfig base_config(const std::string& model_path) {
  EngineConfig c;
  c.model_path = model_path;
  c.block_size = 16;
  c.kv_cache_bytes = 64ull << 20;
  c.kv_cache_dtype = "f16";
  c.max_num_seqs = 64;
  c.max_num_batched_tokens = 512;
  c.max_model_len = 512;
  c.num_threads = 2;
  return c;
}

std::unique_ptr<Engine> make_engine(const EngineConfig& c) {
  auto e = Engine::create(c);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

using SoloRuns = std::map<std::pair<std::string, int32_t>, Sink::Seq>;

class EngineGolden : public ::testing::TestWithParam<ModelCase> {
 protected:
  static void TearDownTestSuite() {
    delete specs_;
    delete solo_;
    specs_ = nullptr;
    solo_ = nullptr;
  }
  void SetUp() override {
    PAGODA_REQUIRE_FIXTURE(model_path());
    if (specs_ == nullptr) specs_ = new std::vector<Spec>(make_specs());
    if (solo_ == nullptr) solo_ = new std::map<std::string, SoloRuns>();
    if (solo_->count(GetParam().file) > 0) return;
    // Each request alone: one engine, one request at a time, no prefix cache. Cold (no warm-up
    // pass) while every concurrent engine below warms up: the warm-up's dummy KV must not change
    // a single token. Once per model.
    SoloRuns& solo = (*solo_)[GetParam().file];
    EngineConfig c = base_config();
    c.enable_prefix_caching = false;
    c.warm_up = false;
    auto engine = make_engine(c);
    ASSERT_NE(engine, nullptr);
    for (const Spec& s : *specs_) {
      Spec single = s;
      single.n = 1;
      Sink sink;
      ASSERT_TRUE(engine->add_request(to_request(single), sink.callback()).ok());
      ASSERT_TRUE(sink.wait(1));
      auto seqs = sink.seqs();
      const auto& seq = seqs.at({s.id, 0});
      ASSERT_EQ(seq.tokens.size(), static_cast<size_t>(s.max_tokens)) << s.id;
      solo[{s.id, 0}] = seq;
    }
  }
  std::string model_path() const {
    return pagoda::testing::fixture("models/" + GetParam().file).string();
  }
  EngineConfig base_config() const { return pagoda::base_config(model_path()); }

  // Runs all specs at once on an engine with config `c`; checks every sample against the solo
  // run and returns the engine's final stats.
  EngineStats run_all_and_compare(const EngineConfig& c) {
    auto engine = make_engine(c);
    if (engine == nullptr) return {};
    Sink sink;
    int64_t finals = 0;
    for (const Spec& s : *specs_) {
      const Status st = engine->add_request(to_request(s), sink.callback());
      EXPECT_TRUE(st.ok()) << st.to_string();
      finals += s.n;
    }
    EXPECT_TRUE(sink.wait(finals));
    EXPECT_TRUE(engine->wait_idle(std::chrono::minutes(1)));
    const auto seqs = sink.seqs();
    for (const Spec& s : *specs_) {
      for (int32_t i = 0; i < s.n; ++i) {
        SCOPED_TRACE(s.id + " sample " + std::to_string(i));
        const auto& seq = seqs.at({s.id, i});
        EXPECT_EQ(seq.finals, 1);
        EXPECT_EQ(seq.final_output.finish_reason, FinishReason::kLength);
        if (s.n > 1 && s.seed) continue;  // (not in the specs: seeded forks differ by design)
        // Greedy samples of an n > 1 request all equal the solo greedy run.
        const Sink::Seq& solo = solo_->at(GetParam().file).at({s.id, 0});
        EXPECT_EQ(seq.tokens, solo.tokens);
        EXPECT_EQ(seq.text, solo.text);
      }
    }
    const EngineStats st = engine->stats();
    EXPECT_EQ(st.num_used_blocks, 0);
    EXPECT_EQ(st.num_running, 0);
    EXPECT_TRUE(st.loop_alive);
    return st;
  }

  static std::vector<Spec>* specs_;
  static std::map<std::string, SoloRuns>* solo_;  // per model file
};

std::vector<Spec>* EngineGolden::specs_ = nullptr;
std::map<std::string, SoloRuns>* EngineGolden::solo_ = nullptr;

TEST_P(EngineGolden, ConcurrentEqualsSoloWithPrefixCaching) {
  EngineConfig c = base_config();
  c.enable_prefix_caching = true;
  const EngineStats st = run_all_and_compare(c);
  EXPECT_GT(st.prefix_cache_hits, 0);  // the shared 48-token prefix
}

TEST_P(EngineGolden, ConcurrentEqualsSoloWithoutPrefixCaching) {
  EngineConfig c = base_config();
  c.enable_prefix_caching = false;
  const EngineStats st = run_all_and_compare(c);
  EXPECT_EQ(st.prefix_cache_hits, 0);
  EXPECT_EQ(st.prompt_tokens_computed, st.prompt_tokens_total);
}

TEST_P(EngineGolden, ConcurrentEqualsSoloWithSmallChunks) {
  EngineConfig c = base_config();
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 24;  // long prompts take many chunks, interleaved with decodes
  run_all_and_compare(c);
}

TEST_P(EngineGolden, ConcurrentEqualsSoloUnderPreemption) {
  EngineConfig c = base_config();
  c.max_model_len = 192;
  // About 20 blocks of 16 tokens: far less than 32 requests need at once.
  c.kv_cache_bytes =
      static_cast<uint64_t>(21 * GetParam().layers * 16 * GetParam().kv_values * 2 /*f16*/);
  const EngineStats st = run_all_and_compare(c);
  // gemma2 (local and global layers) keeps two KV groups whose layers share arrays: a block
  // holds half its layers, so the same bytes make twice as many blocks (a sequence takes blocks
  // in both groups, the local group's only within the window).
  const bool hybrid = GetParam().file.find("gemma2") != std::string::npos;
  const int64_t arrays = hybrid ? (GetParam().layers + 1) / 2 : GetParam().layers;
  EXPECT_LE(st.num_blocks, 21 * GetParam().layers / arrays - 1);
  EXPECT_GE(st.num_blocks, 12);  // one max_model_len sequence
  EXPECT_EQ(st.kv_bytes_per_token, static_cast<double>(arrays * GetParam().kv_values * 2));
  EXPECT_GT(st.num_preemptions, 0);
}

TEST_P(EngineGolden, PrefixCachingCutsComputedPromptTokens) {
  std::mt19937 rng(7);
  std::vector<int32_t> shared = {1};
  for (int i = 0; i < 95; ++i)
    shared.push_back(3 + static_cast<int32_t>(rng() % 31990));
  std::vector<std::vector<int32_t>> prompts;
  for (int r = 0; r < 6; ++r) {
    prompts.push_back(shared);
    for (int k = 0; k < 10; ++k)
      prompts.back().push_back(3 + static_cast<int32_t>(rng() % 31990));
  }
  // together: all six arrive at once, so five of them share blocks the first one computes in
  // the same step (published when planned).
  const auto run = [&](bool caching, bool together = false) {
    EngineConfig c = base_config();
    c.enable_prefix_caching = caching;
    auto engine = make_engine(c);
    Sink sink;
    std::vector<std::vector<int32_t>> outputs;
    for (int r = 0; r < 6; ++r) {
      GenerateRequest req;
      req.request_id = "p" + std::to_string(r);
      req.prompt_tokens = prompts[static_cast<size_t>(r)];
      req.stop.max_tokens = 4;
      req.stop.ignore_eos = true;
      req.sampling.temperature = 0;
      EXPECT_TRUE(engine->add_request(std::move(req), sink.callback()).ok());
      if (!together) {
        EXPECT_TRUE(sink.wait(r + 1));  // one after the other
      }
    }
    EXPECT_TRUE(sink.wait(6));
    const EngineStats st = engine->stats();
    auto seqs = sink.seqs();
    for (int r = 0; r < 6; ++r) {
      const auto& seq = seqs.at({"p" + std::to_string(r), 0});
      outputs.push_back(seq.tokens);
      if (caching && r > 0) {
        EXPECT_EQ(seq.final_output.usage.cached_tokens, 96);  // 6 full blocks of the prefix
      } else {
        EXPECT_EQ(seq.final_output.usage.cached_tokens, 0);
      }
    }
    return std::make_pair(st, outputs);
  };
  const auto [with, out_with] = run(true);
  const auto [without, out_without] = run(false);
  EXPECT_EQ(with.prompt_tokens_total, without.prompt_tokens_total);
  EXPECT_EQ(without.prompt_tokens_computed, without.prompt_tokens_total);
  EXPECT_EQ(with.prompt_tokens_computed, with.prompt_tokens_total - 5 * 96);
  EXPECT_EQ(out_with, out_without);  // cached KV gives the same tokens
  const auto [together, out_together] = run(true, true);
  EXPECT_EQ(together.prompt_tokens_computed, together.prompt_tokens_total - 5 * 96);
  EXPECT_EQ(out_together, out_without);
}

TEST_P(EngineGolden, AbortFreesEveryBlock) {
  auto engine = make_engine(base_config());
  ASSERT_NE(engine, nullptr);
  Sink sink;
  std::mutex mu;
  std::condition_variable cv;
  int tokens_seen = 0;
  for (int r = 0; r < 8; ++r) {
    GenerateRequest req;
    req.request_id = "a" + std::to_string(r);
    req.prompt_tokens = {1};
    for (int k = 0; k < 40 + r * 7; ++k)
      req.prompt_tokens.push_back(100 + r * 50 + k);
    req.stop.max_tokens = 400;
    req.stop.ignore_eos = true;
    req.n = r % 3 == 0 ? 2 : 1;
    auto inner = sink.callback();
    ASSERT_TRUE(engine
                    ->add_request(std::move(req),
                                  [&, inner](RequestOutput o) {
                                    {
                                      std::lock_guard<std::mutex> l(mu);
                                      tokens_seen += static_cast<int>(o.new_token_ids.size());
                                    }
                                    cv.notify_all();
                                    inner(std::move(o));
                                  })
                    .ok());
  }
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return tokens_seen >= 40; });
  }
  EXPECT_GT(engine->stats().num_used_blocks, 0);
  for (int r = 0; r < 8; ++r)
    engine->abort("a" + std::to_string(r));
  ASSERT_TRUE(engine->wait_idle(std::chrono::minutes(1)));
  const EngineStats st = engine->stats();
  EXPECT_EQ(st.num_used_blocks, 0);
  EXPECT_EQ(st.kv_cache_usage, 0.0);
  EXPECT_EQ(st.num_running, 0);
  for (const auto& [key, seq] : sink.seqs()) {
    EXPECT_EQ(seq.finals, 1);
    EXPECT_EQ(seq.final_output.finish_reason, FinishReason::kAbort);
    EXPECT_LT(seq.tokens.size(), 400u);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, EngineGolden, ::testing::ValuesIn(kModels),
                         [](const ::testing::TestParamInfo<ModelCase>& param_info) {
                           std::string s =
                               param_info.param.file.substr(param_info.param.file.rfind('/') + 1);
                           s = s.substr(0, s.find('-'));
                           return s;
                         });

}  // namespace
}  // namespace pagoda
