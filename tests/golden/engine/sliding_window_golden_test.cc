// Releasing the KV blocks behind a sliding window changes no output: the fixtures phi3-Q8_0.gguf
// (every layer sliding, as llama.cpp runs phi3) and gemma2-Q8_0.gguf (hybrid: local and global
// layers alternate, so the cache keeps two layer groups whose layers share arrays) with their
// window cut to 32 tokens (written at test time), block size 4, prompts of 40 to 150 tokens and
// 48 greedy tokens each, batched:
//  - greedy tokens with release on equal those with every block kept (for gemma2: one table,
//    every layer its own arrays, the path checked against the peer's logits), and the peak KV
//    bytes in use fall;
//  - a request whose prompt extends a finished one hits the prefix cache through the window
//    (its earlier blocks are not taken) and gives the same tokens as with prefix caching off.
// A released block a query still read would hand that query another sequence's K/V or the null
// block's (checked by planting an off-by-one in KvManager::first_block_in_window).
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "golden/gguf_copy.h"
#include "pagoda/engine.h"

namespace pagoda {
namespace {

constexpr int32_t kWindow = 32;
constexpr const char* kArchs[] = {"phi3", "gemma2"};

// models/arch/{arch}-Q8_0.gguf with {arch}.attention.sliding_window = kWindow ("" if absent).
std::string small_window_model(const std::string& arch) {
  const auto src = pagoda::testing::fixture("models/arch/" + arch + "-Q8_0.gguf");
  if (!std::filesystem::exists(src)) return "";
  auto out = testing::write_gguf_copy(src,
                                      {[&](format::GgufWriter& w) {
                                         w.set(arch + ".attention.sliding_window",
                                               format::GgufWriteValue::u32(kWindow));
                                       },
                                       nullptr},
                                      "sliding_window_" + arch + ".gguf");
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : "";
}

// A cache no run here fills (no preemption: the peaks compare what the sequences hold).
std::unique_ptr<Engine> make_engine(const std::string& model, bool release, bool caching) {
  EngineConfig c;
  c.model_path = model;
  c.block_size = 4;
  c.kv_cache_bytes = 8ull << 20;
  c.max_num_seqs = 4;
  c.max_num_batched_tokens = 64;
  c.max_model_len = 256;
  c.num_threads = 2;
  c.warm_up = false;
  c.enable_prefix_caching = caching;
  c.release_blocks_outside_window = release;
  auto e = Engine::create(c);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

std::vector<int32_t> prompt(int n, uint32_t seed) {
  std::vector<int32_t> t;
  uint32_t x = seed * 2654435761u + 7u;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.push_back(static_cast<int32_t>(100 + (x >> 8) % 30000));
  }
  return t;
}

struct Result {
  std::vector<int32_t> tokens;
  int32_t cached_tokens = 0;
};

// Runs the prompts concurrently (greedy, 48 tokens, EOS ignored); results in prompt order.
std::vector<Result> generate(Engine& e, const std::vector<std::vector<int32_t>>& prompts) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Result> out(prompts.size());
  size_t done = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateRequest r;
    r.request_id = "r" + std::to_string(i);
    r.prompt_tokens = prompts[i];
    r.sampling.temperature = 0.0f;
    r.stop.max_tokens = 48;
    r.stop.ignore_eos = true;
    const Status st = e.add_request(std::move(r), [&, i](RequestOutput o) {
      std::lock_guard<std::mutex> l(mu);
      out[i].tokens.insert(out[i].tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (o.finished) {
        EXPECT_NE(o.finish_reason, FinishReason::kError) << o.error;
        out[i].cached_tokens = o.usage.cached_tokens;
        ++done;
        cv.notify_all();
      }
    });
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  std::unique_lock<std::mutex> l(mu);
  EXPECT_TRUE(cv.wait_for(l, std::chrono::minutes(5), [&] { return done == prompts.size(); }));
  return out;
}

// Peak KV bytes in use (a hybrid model's blocks hold only one group's layers: fewer bytes each).
double peak_bytes(Engine& e) {
  const EngineStats s = e.stats();
  return static_cast<double>(s.peak_used_blocks) * 4 * s.kv_bytes_per_token;
}

TEST(SlidingWindowGolden, ReleasingBlocksChangesNoToken) {
  for (const std::string arch : kArchs) {
    SCOPED_TRACE(arch);
    const std::string model = small_window_model(arch);
    if (model.empty()) GTEST_SKIP() << "fixture models/arch/" << arch << "-Q8_0.gguf not found";
    const std::vector<std::vector<int32_t>> prompts = {prompt(150, 1), prompt(90, 2),
                                                       prompt(40, 3)};
    auto on = make_engine(model, /*release=*/true, /*caching=*/false);
    auto off = make_engine(model, /*release=*/false, /*caching=*/false);
    ASSERT_TRUE(on && off);
    const std::vector<Result> a = generate(*on, prompts);
    const std::vector<Result> b = generate(*off, prompts);
    for (size_t i = 0; i < prompts.size(); ++i) {
      ASSERT_EQ(a[i].tokens.size(), 48u);
      EXPECT_EQ(a[i].tokens, b[i].tokens) << "prompt " << i;
    }
    const int64_t peak_on = on->stats().peak_used_blocks;
    const int64_t peak_off = off->stats().peak_used_blocks;
    const double bytes_on = peak_bytes(*on), bytes_off = peak_bytes(*off);
    EXPECT_LT(bytes_on, bytes_off);
    if (arch == "phi3") {
      // Kept: the three sequences' whole tables (up to (150 + 47) / 4 blocks for the longest).
      // Released: at most ceil((32 - 1 + 64) / 4) + 1 = 25 per sequence whatever its length.
      EXPECT_LT(peak_on, peak_off);
      EXPECT_LE(peak_on, 3 * 25);
    } else {
      // Two groups of half-size blocks: the global layers' whole tables (what one group of
      // full-size blocks held) plus at most 25 local blocks per sequence.
      EXPECT_LE(peak_on, peak_off + 3 * 25);
      EXPECT_DOUBLE_EQ(on->stats().kv_bytes_per_token * 2, off->stats().kv_bytes_per_token);
    }
    std::printf("%s: peak blocks in use %lld released (%.0f bytes), %lld kept (%.0f bytes)\n",
                arch.c_str(), static_cast<long long>(peak_on), bytes_on,
                static_cast<long long>(peak_off), bytes_off);
  }
}

TEST(SlidingWindowGolden, PrefixHitThroughTheWindowEqualsCachingOff) {
  for (const std::string arch : kArchs) {
    SCOPED_TRACE(arch);
    const std::string model = small_window_model(arch);
    if (model.empty()) GTEST_SKIP() << "fixture models/arch/" << arch << "-Q8_0.gguf not found";
    const std::vector<int32_t> first = prompt(120, 4);
    std::vector<int32_t> second = first;
    const std::vector<int32_t> tail = prompt(20, 5);
    second.insert(second.end(), tail.begin(), tail.end());
    auto cached = make_engine(model, /*release=*/true, /*caching=*/true);
    auto plain = make_engine(model, /*release=*/true, /*caching=*/false);
    ASSERT_TRUE(cached && plain);
    const Result a_cached = generate(*cached, {first})[0];
    const Result b_cached = generate(*cached, {second})[0];
    const Result a_plain = generate(*plain, {first})[0];
    const Result b_plain = generate(*plain, {second})[0];
    EXPECT_EQ(a_cached.tokens, a_plain.tokens);
    EXPECT_EQ(b_cached.tokens, b_plain.tokens);
    // The first request's 30 full prompt blocks are cached (in every group); the hit ends on a
    // block boundary.
    EXPECT_EQ(b_cached.cached_tokens, 120);
    EXPECT_EQ(b_plain.cached_tokens, 0);
  }
}

}  // namespace
}  // namespace pagoda
