// LoRA adapters through the public Engine: 16 concurrent greedy requests over 4 adapters and the
// base model (two prompts, so requests under different adapters share prompt blocks) produce the
// tokens each produces alone on an engine without prefix caching; prefix-cache hits never cross
// adapters; unknown adapters, and unloading one with running requests, are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "golden/lora/lora_fixtures.h"
#include "pagoda/engine.h"

namespace pagoda {
namespace {

// Collects each request's tokens until it finishes.
class Sink {
 public:
  OutputCallback callback() {
    return [this](RequestOutput out) {
      std::lock_guard<std::mutex> lock(mu_);
      auto& toks = tokens_[out.request_id];
      toks.insert(toks.end(), out.new_token_ids.begin(), out.new_token_ids.end());
      if (out.finished) {
        if (out.finish_reason != FinishReason::kLength) errors_[out.request_id] = out.error;
        cached_[out.request_id] = out.usage.cached_tokens;
        ++finished_;
        cv_.notify_all();
      }
    };
  }
  bool wait(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::minutes(2), [&] { return finished_ >= n; });
  }
  std::map<std::string, std::vector<int32_t>> tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }
  std::map<std::string, std::string> errors() {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::vector<int32_t>> tokens_;
  std::map<std::string, std::string> errors_;
  std::map<std::string, int32_t> cached_;
  int finished_ = 0;
};

EngineConfig config(const fs::path& dir, bool prefix_caching) {
  EngineConfig c;
  c.model_path = demo_model().string();
  c.kv_cache_bytes = 32ull << 20;
  c.max_num_seqs = 32;
  c.max_model_len = 256;
  c.warm_up = false;
  c.enable_prefix_caching = prefix_caching;
  c.max_lora_rank = 16;
  for (int i = 0; i < 4; ++i) {
    const std::string name = "multi-" + std::to_string(i);
    c.lora_adapters.push_back(LoraAdapterSpec{name, (dir / name).string()});
  }
  return c;
}

GenerateRequest request(const Engine& e, int i) {
  GenerateRequest r;
  r.request_id = "r" + std::to_string(i);
  // Long enough for a few full KV blocks (the prefix cache only shares full blocks).
  const std::string text =
      i % 2 == 0 ? "Once upon a time, a little fox lived by the river. Every morning the fox "
                   "walked to the old bridge and watched the boats go by. One day"
                 : "The little robot had a red hat and a blue scarf. It liked to sing songs "
                   "with the birds in the garden, and when the sun went down it";
  r.prompt_tokens = e.tokenize(text, true, true);
  r.sampling.temperature = 0;
  r.stop.max_tokens = 12;
  r.stop.ignore_eos = true;
  if (i % 5 != 4) r.lora_name = "multi-" + std::to_string(i % 5);
  return r;
}

TEST(LoraEngine, ConcurrentAdaptersEqualAlone) {
  REQUIRE_LORA_FIXTURES(dir);
  constexpr int kRequests = 16;
  // Reference: each request alone, no prefix cache.
  std::map<std::string, std::vector<int32_t>> alone;
  {
    auto engine = Engine::create(config(dir, false));
    ASSERT_TRUE(engine.ok()) << engine.status().to_string();
    ASSERT_EQ((*engine)->lora_adapters().size(), 4u);
    for (int i = 0; i < kRequests; ++i) {
      Sink sink;
      ASSERT_TRUE((*engine)->add_request(request(**engine, i), sink.callback()).ok());
      ASSERT_TRUE(sink.wait(1));
      alone["r" + std::to_string(i)] = sink.tokens().at("r" + std::to_string(i));
    }
  }
  // The adapters change the greedy tokens (else this test could not tell them apart): per prompt,
  // the five variants (four adapters and none) give at least three different continuations.
  for (int prompt = 0; prompt < 2; ++prompt) {
    std::set<std::vector<int32_t>> distinct;
    for (int i = prompt; i < kRequests; i += 2)
      distinct.insert(alone.at("r" + std::to_string(i)));
    EXPECT_GE(distinct.size(), 3u) << "prompt " << prompt;
  }
  // All at once, twice (the second round finds the first round's blocks in the prefix cache).
  auto engine = Engine::create(config(dir, true));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  for (int round = 0; round < 2; ++round) {
    Sink sink;
    for (int i = 0; i < kRequests; ++i) {
      GenerateRequest r = request(**engine, i);
      ASSERT_TRUE((*engine)->add_request(std::move(r), sink.callback()).ok());
    }
    ASSERT_TRUE(sink.wait(kRequests));
    EXPECT_TRUE(sink.errors().empty());
    const auto together = sink.tokens();
    for (int i = 0; i < kRequests; ++i) {
      const std::string id = "r" + std::to_string(i);
      EXPECT_EQ(together.at(id), alone.at(id)) << "round " << round << " " << id;
    }
  }
  EXPECT_GT((*engine)->stats().prefix_cache_hits, 0);
}

TEST(LoraEngine, LoadUnloadAndRefusals) {
  REQUIRE_LORA_FIXTURES(dir);
  EngineConfig c = config(dir, true);
  c.lora_adapters.resize(1);
  c.max_loras = 2;
  auto created = Engine::create(c);
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Engine& e = **created;
  GenerateRequest r = request(e, 1);
  r.lora_name = "nope";
  Sink sink;
  EXPECT_EQ(e.add_request(std::move(r), sink.callback()).code(), StatusCode::kNotFound);
  EXPECT_EQ(e.unload_lora_adapter("nope").code(), StatusCode::kNotFound);
  EXPECT_EQ(e.load_lora_adapter("multi-0", (dir / "multi-1").string()).code(),
            StatusCode::kInvalidArgument);  // the name is taken
  EXPECT_EQ(e.load_lora_adapter("big", (dir / "multi-0").string()).code(), StatusCode::kOk);
  EXPECT_EQ(e.load_lora_adapter("third", (dir / "multi-2").string()).code(),
            StatusCode::kResourceExhausted);  // max_loras 2
  EXPECT_EQ(e.load_lora_adapter("missing", (dir / "no-such-dir").string()).ok(), false);
  // A request holding an adapter: unloading it is refused until the request finishes.
  GenerateRequest held = request(e, 0);
  held.lora_name = "big";
  held.stop.max_tokens = 200;
  ASSERT_TRUE(e.add_request(std::move(held), sink.callback()).ok());
  EXPECT_EQ(e.unload_lora_adapter("big").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(sink.wait(1));
  EXPECT_TRUE(e.unload_lora_adapter("big").ok());
  EXPECT_EQ(e.lora_adapters().size(), 1u);
  // Loaded again under the same name: works, with a fresh id.
  EXPECT_TRUE(e.load_lora_adapter("big", (dir / "multi-3").string()).ok());
  GenerateRequest again = request(e, 0);
  again.lora_name = "big";
  ASSERT_TRUE(e.add_request(std::move(again), sink.callback()).ok());
  ASSERT_TRUE(sink.wait(2));
  EXPECT_TRUE(sink.errors().empty());
}

}  // namespace
}  // namespace pagoda
