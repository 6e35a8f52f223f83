// Speculative decoding on real models, with each proposer: prompt lookup, a draft model and a
// Q4_0 self-draft. Greedy outputs with speculation on are token-identical (and text-, finish- and
// usage-identical) to speculation off, for single requests and for 16 concurrent mixed requests
// (copy-heavy prompts so drafts are proposed and accepted, stop strings and max_tokens inside
// accepted runs, n = 2, logprobs), also with a KV cache small enough to preempt and recompute;
// seeded sampling does not depend on the batch. The counters must show drafts were verified and
// accepted, or the comparison proves nothing. Models: the bundled demo model (ngram; draft
// models/demo-draft.gguf) and the fixture llama-Q8_0.gguf (Llama-2 vocabulary; ngram, the
// fixture llama-Q4_0.gguf as draft, and its own Q4_0 self-draft).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <map>
#include <mutex>

#include "pagoda/engine.h"
#include "test_support.h"

namespace pagoda {
namespace {

struct Seq {
  std::vector<int32_t> tokens;
  std::string text;
  std::vector<TokenLogprobs> logprobs;
  RequestOutput final_output;
  int finals = 0;
};
using Outputs = std::map<std::pair<std::string, int32_t>, Seq>;

class Sink {
 public:
  OutputCallback callback() {
    return [this](RequestOutput o) {
      std::lock_guard<std::mutex> l(mu_);
      Seq& s = seqs_[{o.request_id, o.index}];
      s.tokens.insert(s.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      s.text += o.text_delta;
      s.logprobs.insert(s.logprobs.end(), o.logprobs.begin(), o.logprobs.end());
      if (o.finished) {
        ++s.finals;
        s.final_output = o;
        ++num_finals_;
        cv_.notify_all();
      }
    };
  }
  bool wait(int64_t finals) {
    std::unique_lock<std::mutex> l(mu_);
    // Generous: the shared 2-core machine may run at a load of 16 (a correctness test, not a
    // performance one).
    return cv_.wait_for(l, std::chrono::minutes(10), [&] { return num_finals_ >= finals; });
  }
  Outputs seqs() {
    std::lock_guard<std::mutex> l(mu_);
    return seqs_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  Outputs seqs_;
  int64_t num_finals_ = 0;
};

// Copy-heavy passages: a prompt holds a text and asks for it again.
const char* const kTexts[] = {
    "Once upon a time there was a little girl named Lily. She liked to play in the park with her "
    "dog. One day Lily and her dog went to the park.",
    "The cat sat on the mat. The dog sat on the log. The bird sat on the tree. The cat sat on the",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
    "Tom had a red ball. Tom liked his red ball. One day Tom lost his red ball in the garden.",
};

std::vector<GenerateRequest> make_requests(const Engine& engine) {
  std::vector<GenerateRequest> out;
  for (int i = 0; i < 16; ++i) {
    GenerateRequest r;
    r.request_id = "req-" + std::to_string(i);
    const std::string text = kTexts[i % 4];
    std::string prompt = i % 3 == 0 ? text + " " + text : text;
    if (i % 5 == 2) prompt += " Again: " + text.substr(0, text.size() / 2);
    r.prompt_tokens = engine.tokenize(prompt, true, false);
    r.sampling.temperature = 0;
    r.stop.max_tokens = 8 + (i * 13) % 41;
    if (i % 4 == 1) r.stop.ignore_eos = true;
    if (i % 6 == 4) r.n = 2;
    if (i % 5 == 3) r.sampling.logprobs = 2;
    // A grammar mask: drafts are verified against the masked distribution, and the matcher
    // advances through accepted tokens only.
    if (i % 7 == 6) r.sampling.structured.kind = StructuredOutputs::Kind::kJsonObject;
    // A JSON schema: a draft model's drafts follow a copy of the matcher (its q masked too).
    if (i % 7 == 3) {
      r.sampling.structured.kind = StructuredOutputs::Kind::kJsonSchema;
      r.sampling.structured.spec =
          R"({"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"}},)"
          R"("required":["name","age"]})";
    }
    out.push_back(std::move(r));
  }
  return out;
}

// A target model and a proposer: prompt lookup, or a draft model (a file next to the target).
struct Case {
  std::string model;   // "demo" or a fixture under models/
  std::string method;  // ngram | draft
  std::string draft;   // method draft: "demo-draft" or a fixture under models/
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " + " << c.method << (c.draft.empty() ? "" : " " + c.draft);
}

std::string model_path(const std::string& m) {
  if (m == "demo") return std::string(PAGODA_SOURCE_DIR) + "/models/demo.gguf";
  if (m == "demo-draft") return std::string(PAGODA_SOURCE_DIR) + "/models/demo-draft.gguf";
  return pagoda::testing::fixture("models/" + m).string();
}

EngineConfig config(const Case& k, bool speculative) {
  EngineConfig c;
  c.model_path = model_path(k.model);
  c.block_size = 16;
  c.kv_cache_bytes = 64ull << 20;
  c.max_num_seqs = 32;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 512;
  c.num_threads = 2;
  c.warm_up = false;
  if (speculative && k.method == "draft") {
    c.speculative.method = "draft";
    c.speculative.model = model_path(k.draft);
    c.speculative.num_speculative_tokens = 4;
    c.speculative.disable_batch_tokens = 0;
  } else if (speculative && k.method == "self") {
    c.speculative.method = "self";
    c.speculative.self_draft_dtype = "q4_0";
    c.speculative.num_speculative_tokens = 4;
    c.speculative.disable_batch_tokens = 0;
  } else if (speculative) {
    c.speculative.method = "ngram";
    c.speculative.num_speculative_tokens = 5;
    c.speculative.ngram_min = 1;
    c.speculative.ngram_max = 3;
    c.speculative.disable_batch_tokens = 0;  // speculate at any batch size (tested here)
  }
  return c;
}

Outputs run(const EngineConfig& c, const std::vector<GenerateRequest>& requests, bool one_by_one,
            EngineStats* stats = nullptr) {
  auto engine = Engine::create(c);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  Sink sink;
  int64_t finals = 0;
  for (const GenerateRequest& r : requests) {
    const Status st = (*engine)->add_request(r, sink.callback());
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) continue;
    finals += r.n;
    if (one_by_one) {
      EXPECT_TRUE(sink.wait(finals));
    }
  }
  EXPECT_TRUE(sink.wait(finals));
  EXPECT_TRUE((*engine)->wait_idle(std::chrono::minutes(1)));
  if (stats != nullptr) *stats = (*engine)->stats();
  const EngineStats s = (*engine)->stats();
  EXPECT_EQ(s.num_used_blocks, 0);
  return sink.seqs();
}

void expect_same(const Outputs& off, const Outputs& on) {
  ASSERT_EQ(off.size(), on.size());
  for (const auto& [key, a] : off) {
    const Seq& b = on.at(key);
    const std::string name = key.first + "/" + std::to_string(key.second);
    EXPECT_EQ(b.finals, 1) << name;
    EXPECT_EQ(a.tokens, b.tokens) << name;
    EXPECT_EQ(a.text, b.text) << name;
    EXPECT_EQ(a.final_output.finish_reason, b.final_output.finish_reason) << name;
    EXPECT_EQ(a.final_output.stop_reason, b.final_output.stop_reason) << name;
    EXPECT_EQ(a.final_output.usage.completion_tokens, b.final_output.usage.completion_tokens)
        << name;
    ASSERT_EQ(a.logprobs.size(), b.logprobs.size()) << name;
    for (size_t i = 0; i < a.logprobs.size(); ++i) {
      EXPECT_EQ(a.logprobs[i].token, b.logprobs[i].token) << name;
      EXPECT_NEAR(a.logprobs[i].logprob, b.logprobs[i].logprob, 1e-3) << name << " @" << i;
      ASSERT_EQ(a.logprobs[i].top.size(), b.logprobs[i].top.size()) << name;
    }
  }
}

// Stop strings taken from the middle of each request's speculation-off output, so the stop
// lands inside an accepted run of the speculative engine.
void add_stop_strings(std::vector<GenerateRequest>& requests, const Outputs& off) {
  for (size_t i = 0; i < requests.size(); i += 3) {
    const std::string& text = off.at({requests[i].request_id, 0}).text;
    if (text.size() < 12) continue;
    requests[i].stop.stop_strings = {text.substr(text.size() / 2, 3)};
  }
}

class SpeculativeGolden : public ::testing::TestWithParam<Case> {
 protected:
  std::string path() const { return model_path(GetParam().model); }
  const Case& path_case() const { return GetParam(); }
};

TEST_P(SpeculativeGolden, GreedyOutputsEqualSpeculationOff) {
  PAGODA_REQUIRE_FIXTURE(path());
  if (!GetParam().draft.empty()) PAGODA_REQUIRE_FIXTURE(model_path(GetParam().draft));
  auto probe = Engine::create(config(path_case(), false));
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  std::vector<GenerateRequest> requests = make_requests(**probe);
  probe->reset();
  const Outputs plain = run(config(path_case(), false), requests, true);
  add_stop_strings(requests, plain);

  // 16 concurrent requests, then each alone. With the cost rule on (the default), which drafts
  // are made follows the machine's timings (a fixture that accepts few may draft almost none);
  // the counts are checked on a run with fixed k, where every sampled step drafts.
  const Outputs off = run(config(path_case(), false), requests, false);
  expect_same(off, run(config(path_case(), true), requests, false));
  EngineConfig fixed = config(path_case(), true);
  fixed.speculative.adaptive = false;
  EngineStats stats;
  const Outputs on = run(fixed, requests, false, &stats);
  expect_same(off, on);
  EXPECT_GT(stats.spec_decode_num_drafts, 0);
  EXPECT_GT(stats.spec_decode_num_accepted_tokens, 0);
  EXPECT_LE(stats.spec_decode_num_accepted_tokens, stats.spec_decode_num_draft_tokens);
  ASSERT_FALSE(stats.spec_decode_num_accepted_tokens_per_pos.empty());
  EXPECT_GT(stats.spec_decode_num_accepted_tokens_per_pos[0], 0);
  const Outputs solo_on = run(config(path_case(), true), requests, true);
  expect_same(off, solo_on);
  std::printf("drafts %lld, draft tokens %lld, accepted %lld\n",
              static_cast<long long>(stats.spec_decode_num_drafts),
              static_cast<long long>(stats.spec_decode_num_draft_tokens),
              static_cast<long long>(stats.spec_decode_num_accepted_tokens));
}

TEST_P(SpeculativeGolden, PreemptionWithDraftsRecomputesTheSameOutputs) {
  PAGODA_REQUIRE_FIXTURE(path());
  if (!GetParam().draft.empty()) PAGODA_REQUIRE_FIXTURE(model_path(GetParam().draft));
  // Bytes per KV block, from an uncapped 64 MiB cache.
  // Speculative: a draft model's KV shares the budget (bytes per block id = target + draft).
  EngineConfig probe_cfg = config(path_case(), true);
  probe_cfg.max_num_seqs = 4096;
  probe_cfg.max_num_batched_tokens = 4096;
  auto probe = Engine::create(probe_cfg);
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  const uint64_t per_block =
      probe_cfg.kv_cache_bytes / static_cast<uint64_t>((*probe)->stats().num_blocks + 1);
  const std::vector<GenerateRequest> requests = make_requests(**probe);
  probe->reset();
  const Outputs off = run(config(path_case(), false), requests, false);
  // Room for the longest request and 4 blocks more, for 16 requests: preemption and recompute.
  int64_t longest = 0;
  for (const GenerateRequest& r : requests) {
    longest = std::max<int64_t>(longest,
                                static_cast<int64_t>(r.prompt_tokens.size()) + r.stop.max_tokens);
  }
  const int64_t blocks = (longest + 15) / 16 + 4;
  EngineConfig small = config(path_case(), true);
  small.speculative.adaptive = false;  // every sampled step drafts (not the machine's timings)
  small.max_model_len = static_cast<int32_t>(longest);
  small.kv_cache_bytes = per_block * static_cast<uint64_t>(blocks) + per_block / 2;
  EngineStats stats;
  const Outputs on = run(small, requests, false, &stats);
  expect_same(off, on);
  EXPECT_LE(stats.num_blocks, blocks);
  EXPECT_GT(stats.num_preemptions, 0);
  EXPECT_GT(stats.spec_decode_num_accepted_tokens, 0);
}

// Seeded sampling with speculation: each request's tokens come from its own RNG stream, one draw
// per emitted token, so they do not depend on the batch (concurrent == alone) nor on preemption.
// (Their distribution equals the target's: tests/unit/sampling/rejection_sampler_test.cc.)
TEST_P(SpeculativeGolden, SeededSamplingDoesNotDependOnTheBatch) {
  PAGODA_REQUIRE_FIXTURE(path());
  if (!GetParam().draft.empty()) PAGODA_REQUIRE_FIXTURE(model_path(GetParam().draft));
  auto probe = Engine::create(config(path_case(), false));
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  std::vector<GenerateRequest> requests = make_requests(**probe);
  probe->reset();
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].sampling.temperature = 0.3f;
    requests[i].sampling.top_p = 0.9f;
    requests[i].sampling.seed = 100 + i;
    requests[i].sampling.presence_penalty = i % 2 == 0 ? 0.5f : 0.0f;
    requests[i].n = 1;
  }
  // Fixed k: every sampled step drafts (with the cost rule, which drafts are made follows the
  // machine's timings, and a loaded machine may draft none).
  EngineConfig fixed = config(path_case(), true);
  fixed.speculative.adaptive = false;
  EngineStats stats;
  const Outputs concurrent = run(fixed, requests, false, &stats);
  const Outputs alone = run(fixed, requests, true);
  expect_same(alone, concurrent);
  EXPECT_GT(stats.spec_decode_num_drafts, 0);
  // The fixture's synthetic weights give nearly flat distributions (drafts rarely accepted);
  // the demo model is trained.
  if (GetParam().model == "demo") {
    EXPECT_GT(stats.spec_decode_num_accepted_tokens, 0);
  }
}

// A draft model with another tokenizer is refused at load, naming the mismatch.
TEST(SpeculativeDraftModel, VocabularyMismatchIsRefused) {
  const std::string llama = model_path("llama-Q4_0.gguf");
  PAGODA_REQUIRE_FIXTURE(llama);
  EngineConfig c = config(Case{"demo", "draft", "llama-Q4_0.gguf"}, true);
  auto engine = Engine::create(c);
  ASSERT_FALSE(engine.ok());
  EXPECT_EQ(engine.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(engine.status().message().find("speculative model"), std::string::npos)
      << engine.status().to_string();
  EXPECT_NE(engine.status().message().find("vocabulary"), std::string::npos)
      << engine.status().to_string();
  c.speculative.model.clear();
  EXPECT_FALSE(Engine::create(c).ok());  // method draft without a model
  c = config(Case{"demo", "self", ""}, true);
  c.speculative.self_draft_dtype = "q9_9";
  engine = Engine::create(c);
  ASSERT_FALSE(engine.ok());
  EXPECT_NE(engine.status().message().find("self_draft_dtype"), std::string::npos);
}

// The demo model drafting for itself: every greedy draft is the target's own next token, so
// nearly all are accepted, unless the draft's KV cache (same block ids as the target's, caught up
// after prefill chunks, accepted runs and rejections, scratch blocks past the table) is wrong
// somewhere. Batched numerics may break rare near-ties, hence not exactly all.
TEST(SpeculativeDraftModel, DraftEqualToTargetIsAcceptedAlmostAlways) {
  const Case self{"demo", "draft", "demo"};
  auto probe = Engine::create(config(self, false));
  ASSERT_TRUE(probe.ok()) << probe.status().to_string();
  std::vector<GenerateRequest> requests = make_requests(**probe);
  probe->reset();
  // Constrained requests (a JSON object, a JSON schema) draft too (their drafts follow a copy of
  // the matcher, so the draft's masked argmax is the target's masked argmax): tested alone below.
  std::vector<GenerateRequest> only;
  for (GenerateRequest& r : requests) {
    if (!r.sampling.structured.empty()) only.push_back(r);
    r.sampling.structured = {};
  }
  ASSERT_GE(only.size(), 3u);
  const Outputs off = run(config(self, false), requests, false);
  // Speculating at every step; then only once the batch is small (the draft's KV lags while the
  // 16 requests run without drafts, then catches up).
  for (const int32_t disable_batch_tokens : {0, 8}) {
    EngineConfig c = config(self, true);
    c.max_num_batched_tokens = 64;  // prompts in several chunks
    c.speculative.adaptive = false;
    c.speculative.disable_batch_tokens = disable_batch_tokens;
    EngineStats stats;
    const Outputs on = run(c, requests, false, &stats);
    expect_same(off, on);
    ASSERT_GT(stats.spec_decode_num_draft_tokens, 50);
    EXPECT_GE(static_cast<double>(stats.spec_decode_num_accepted_tokens),
              0.97 * static_cast<double>(stats.spec_decode_num_draft_tokens));
    std::printf("self-draft (disable_batch_tokens %d): draft tokens %lld, accepted %lld\n",
                disable_batch_tokens, static_cast<long long>(stats.spec_decode_num_draft_tokens),
                static_cast<long long>(stats.spec_decode_num_accepted_tokens));
  }  // The constrained requests alone: every draft is theirs (before the matcher copy they got
  // none; with q unmasked, the draft's argmax would often be a token the grammar refuses).
  EngineConfig c = config(self, true);
  c.speculative.adaptive = false;
  EngineStats stats;
  const Outputs on = run(c, only, false, &stats);
  expect_same(run(config(self, false), only, false), on);
  ASSERT_GT(stats.spec_decode_num_draft_tokens, 20);
  EXPECT_GE(static_cast<double>(stats.spec_decode_num_accepted_tokens),
            0.97 * static_cast<double>(stats.spec_decode_num_draft_tokens));
  std::printf("constrained self-draft: draft tokens %lld, accepted %lld\n",
              static_cast<long long>(stats.spec_decode_num_draft_tokens),
              static_cast<long long>(stats.spec_decode_num_accepted_tokens));
}

INSTANTIATE_TEST_SUITE_P(Models, SpeculativeGolden,
                         ::testing::Values(Case{"demo", "ngram", ""},
                                           Case{"llama-Q8_0.gguf", "ngram", ""},
                                           Case{"demo", "draft", "demo-draft"},
                                           Case{"llama-Q8_0.gguf", "draft", "llama-Q4_0.gguf"},
                                           Case{"llama-Q8_0.gguf", "self", ""}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string name =
                               param_info.param.model + "_" + param_info.param.method;
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace pagoda
