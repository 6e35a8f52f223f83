// Beam search through the public Engine on real models (the bundled demo model and the fixture
// llama-Q8_0.gguf), against references that share nothing with the engine's beam machinery:
//  - width 1 equals greedy decoding, token for token;
//  - width 4 equals a brute-force beam search written here from transformers' BeamSearchScorer
//    definition, whose every candidate prefix is re-run from scratch as its own one-token
//    request on an engine with prefix caching off (no shared or forked KV), for outputs of up
//    to 6 tokens, with length_penalty 1, 2 and -0.5 and each early_stopping mode;
//  - each returned beam's score is cumulative logprob / length ** length_penalty (the published
//    formula, length = generated tokens with a final EOS) and the beams come best first;
//  - the KV blocks in use after the requests equal those before (pruned beams freed), and
//    beams share blocks (peak blocks below 4 independent sequences);
//  - a beam request the KV cache cannot keep fails cleanly (it is not preempted) while another
//    one completes with its solo result; one that could never fit is refused up front.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <map>
#include <mutex>

#include "pagoda/engine.h"
#include "test_support.h"

namespace pagoda {
namespace {

using ES = BeamSearchParams::EarlyStopping;

std::string model_path(const std::string& m) {
  if (m == "demo") return std::string(PAGODA_SOURCE_DIR) + "/models/demo.gguf";
  return pagoda::testing::fixture("models/" + m).string();
}

EngineConfig config(const std::string& model, bool prefix_caching = true) {
  EngineConfig c;
  c.model_path = model_path(model);
  c.block_size = 16;
  c.kv_cache_bytes = 32ull << 20;
  c.max_num_seqs = 32;
  c.max_num_batched_tokens = 256;
  c.max_model_len = 512;
  c.num_threads = 2;
  c.warm_up = false;
  c.enable_prefix_caching = prefix_caching;
  return c;
}

std::unique_ptr<Engine> make_engine(const EngineConfig& c) {
  auto e = Engine::create(c);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

// Collects every output of one request (its n samples).
class Sink {
 public:
  OutputCallback callback() {
    return [this](RequestOutput o) {
      std::lock_guard<std::mutex> l(mu_);
      auto& s = outs_[o.index];
      s.tokens.insert(s.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
      if (!o.logprobs.empty()) s.top = o.logprobs.back().top;
      if (o.finished) {
        s.final_output = o;
        ++finals_;
        cv_.notify_all();
      }
    };
  }
  struct Out {
    std::vector<int32_t> tokens;
    std::vector<std::pair<int32_t, float>> top;
    RequestOutput final_output;
  };
  std::map<int32_t, Out> wait(int32_t n) {
    std::unique_lock<std::mutex> l(mu_);
    EXPECT_TRUE(cv_.wait_for(l, std::chrono::minutes(5), [&] { return finals_ >= n; }));
    return outs_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int32_t, Out> outs_;
  int32_t finals_ = 0;
};

GenerateRequest beam_request(const std::string& id, const std::vector<int32_t>& prompt,
                             int32_t width, int32_t n, int32_t max_tokens, bool ignore_eos,
                             float length_penalty = 1.0f, ES es = ES::kFalse) {
  GenerateRequest r;
  r.request_id = id;
  r.prompt_tokens = prompt;
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = ignore_eos;
  r.n = n;
  BeamSearchParams p;
  p.beam_width = width;
  p.length_penalty = length_penalty;
  p.early_stopping = es;
  r.beam_search = p;
  return r;
}

std::map<int32_t, Sink::Out> run(Engine& e, GenerateRequest r) {
  Sink sink;
  const int32_t n = r.n;
  const Status st = e.add_request(std::move(r), sink.callback());
  EXPECT_TRUE(st.ok()) << st.to_string();
  if (!st.ok()) return {};
  return sink.wait(n);
}

std::vector<int32_t> greedy(Engine& e, const std::vector<int32_t>& prompt, int32_t max_tokens,
                            bool ignore_eos) {
  GenerateRequest r;
  r.request_id = "greedy";
  r.prompt_tokens = prompt;
  r.sampling.temperature = 0.0f;
  r.stop.max_tokens = max_tokens;
  r.stop.ignore_eos = ignore_eos;
  return run(e, std::move(r))[0].tokens;
}

// The brute-force reference: transformers' beam search (BeamSearchScorer.process /
// BeamHypotheses with our length convention), each candidate prefix's next-token logprobs from
// a fresh one-token request (prefix caching off on `fresh`: every prefix recomputed).
struct Hyp {
  std::vector<int32_t> tokens;
  double cum = 0;
  double score = 0;
};

double score_of(double cum, size_t len, float lp) {
  return cum / std::pow(static_cast<double>(len), static_cast<double>(lp));
}

std::vector<Hyp> reference_beam_search(Engine& fresh, const std::vector<int32_t>& prompt,
                                       int32_t width, int32_t max_tokens,
                                       std::optional<int32_t> eos, float lp, ES es) {
  struct Beam {
    std::vector<int32_t> tokens;
    double cum = 0;
  };
  std::vector<Beam> live{Beam{}};
  std::vector<Hyp> hyps;
  const auto add = [&](std::vector<int32_t> tokens, double cum) {
    Hyp h{std::move(tokens), cum, 0};
    h.score = score_of(cum, h.tokens.size(), lp);
    if (static_cast<int32_t>(hyps.size()) < width) {
      hyps.push_back(std::move(h));
      return;
    }
    auto worst = std::min_element(hyps.begin(), hyps.end(),
                                  [](const Hyp& a, const Hyp& b) { return a.score < b.score; });
    if (h.score > worst->score) *worst = std::move(h);
  };
  for (int32_t step = 1; step <= max_tokens; ++step) {
    struct Cand {
      size_t beam, rank;
      int32_t token;
      double cum;
    };
    std::vector<Cand> all;
    for (size_t b = 0; b < live.size(); ++b) {
      GenerateRequest r;
      r.request_id = "ref";
      r.prompt_tokens = prompt;
      r.prompt_tokens.insert(r.prompt_tokens.end(), live[b].tokens.begin(), live[b].tokens.end());
      r.sampling.temperature = 0.0f;
      r.sampling.logprobs = 2 * width;
      r.stop.max_tokens = 1;
      r.stop.ignore_eos = true;
      const auto top = run(fresh, std::move(r))[0].top;
      EXPECT_EQ(top.size(), static_cast<size_t>(2 * width));
      for (size_t i = 0; i < top.size(); ++i)
        all.push_back(Cand{b, i, top[i].first, live[b].cum + top[i].second});
    }
    std::stable_sort(all.begin(), all.end(),
                     [](const Cand& a, const Cand& b) { return a.cum > b.cum; });
    std::vector<Beam> next;
    for (size_t rank = 0; rank < all.size() && rank < static_cast<size_t>(2 * width); ++rank) {
      const Cand& c = all[rank];
      std::vector<int32_t> tokens = live[c.beam].tokens;
      tokens.push_back(c.token);
      if (eos && c.token == *eos) {
        if (rank < static_cast<size_t>(width)) add(std::move(tokens), c.cum);
        continue;
      }
      next.push_back(Beam{std::move(tokens), c.cum});
      if (next.size() == static_cast<size_t>(width)) break;
    }
    live = std::move(next);
    if (live.empty()) break;
    if (step == max_tokens) {
      for (Beam& b : live)
        add(std::move(b.tokens), b.cum);
      break;
    }
    if (static_cast<int32_t>(hyps.size()) == width) {
      if (es == ES::kTrue) break;
      const size_t len =
          es == ES::kNever && lp > 0 ? static_cast<size_t>(max_tokens) : static_cast<size_t>(step);
      const double highest = score_of(live[0].cum, len, lp);
      double worst = hyps[0].score;
      for (const Hyp& h : hyps)
        worst = std::min(worst, h.score);
      if (worst >= highest) break;
    }
  }
  std::stable_sort(hyps.begin(), hyps.end(),
                   [](const Hyp& a, const Hyp& b) { return a.score > b.score; });
  return hyps;
}

std::vector<int32_t> prompt_of(Engine& e, const std::string& text) {
  return e.tokenize(text, true, false);
}

// The model's EOS id (from its eos_token text), if it is one token.
std::optional<int32_t> eos_id(Engine& e) {
  const std::vector<int32_t> ids = e.tokenize(e.model_info().eos_token, false, true);
  if (ids.size() == 1) return ids[0];
  return std::nullopt;
}

class BeamSearch : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() != "demo") PAGODA_REQUIRE_FIXTURE(model_path(GetParam()));
  }
};

TEST_P(BeamSearch, WidthOneIsGreedy) {
  auto e = make_engine(config(GetParam()));
  ASSERT_NE(e, nullptr);
  for (const char* text : {"Once upon a time", "The little dog", "Tom and Lily went to"}) {
    const std::vector<int32_t> prompt = prompt_of(*e, text);
    for (const bool ignore_eos : {true, false}) {
      const auto want = greedy(*e, prompt, 12, ignore_eos);
      const auto got = run(*e, beam_request("b1", prompt, 1, 1, 12, ignore_eos));
      ASSERT_EQ(got.size(), 1u);
      EXPECT_EQ(got.at(0).tokens, want) << text << " ignore_eos " << ignore_eos;
      EXPECT_EQ(got.at(0).final_output.usage.completion_tokens, static_cast<int32_t>(want.size()));
    }
  }
  EXPECT_EQ(e->stats().num_used_blocks, 0);
}

TEST_P(BeamSearch, WidthFourEqualsBruteForce) {
  auto e = make_engine(config(GetParam()));
  auto fresh = make_engine(config(GetParam(), /*prefix_caching=*/false));
  ASSERT_NE(e, nullptr);
  ASSERT_NE(fresh, nullptr);
  const std::optional<int32_t> eos = eos_id(*e);
  struct Case {
    const char* text;
    int32_t max_tokens;
    bool ignore_eos;
    float lp;
    ES es;
  };
  const Case cases[] = {{"Once upon a time", 6, true, 1.0f, ES::kFalse},
                        {"The little dog", 5, false, 1.0f, ES::kFalse},
                        {"Tom and Lily went to", 6, false, 2.0f, ES::kNever},
                        {"She was very happy", 4, false, -0.5f, ES::kTrue},
                        {"One day", 6, true, 0.5f, ES::kNever}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const std::vector<int32_t> prompt = prompt_of(*e, c.text);
    const std::vector<Hyp> want = reference_beam_search(
        *fresh, prompt, 4, c.max_tokens, c.ignore_eos ? std::nullopt : eos, c.lp, c.es);
    const int64_t used_before = e->stats().num_used_blocks;
    const auto got =
        run(*e, beam_request("b4", prompt, 4, 4, c.max_tokens, c.ignore_eos, c.lp, c.es));
    ASSERT_EQ(got.size(), 4u);
    ASSERT_GE(want.size(), 4u);
    for (int32_t i = 0; i < 4; ++i) {
      const Sink::Out& o = got.at(i);
      EXPECT_EQ(o.tokens, want[static_cast<size_t>(i)].tokens) << "beam " << i;
      ASSERT_TRUE(o.final_output.beam_cumulative_logprob && o.final_output.beam_score);
      const double cum = *o.final_output.beam_cumulative_logprob;
      EXPECT_NEAR(cum, want[static_cast<size_t>(i)].cum, 2e-3) << "beam " << i;
      // The published ranking formula, and best first.
      EXPECT_NEAR(*o.final_output.beam_score, score_of(cum, o.tokens.size(), c.lp), 1e-9);
      if (i > 0) {
        EXPECT_LE(*o.final_output.beam_score, *got.at(i - 1).final_output.beam_score);
      }
    }
    EXPECT_EQ(e->stats().num_used_blocks, used_before) << "pruned or ended beams kept blocks";
  }
}

// Hypotheses that end early: a stop token among the likely ones (the prompt's second most
// likely next token, as stop_token_ids) finishes beams at every step it ranks within the width,
// so the finished set and each early_stopping rule decide the result.
TEST_P(BeamSearch, StopTokenHypothesesEqualBruteForce) {
  auto e = make_engine(config(GetParam()));
  auto fresh = make_engine(config(GetParam(), /*prefix_caching=*/false));
  ASSERT_NE(e, nullptr);
  ASSERT_NE(fresh, nullptr);
  for (const char* text : {"Once upon a time", "The little dog"}) {
    const std::vector<int32_t> prompt = prompt_of(*e, text);
    GenerateRequest first;
    first.request_id = "first";
    first.prompt_tokens = prompt;
    first.sampling.temperature = 0.0f;
    first.sampling.logprobs = 8;
    first.stop.max_tokens = 1;
    const auto top = run(*fresh, std::move(first))[0].top;
    ASSERT_GE(top.size(), 2u);
    const int32_t stop_token = top[1].first;
    bool any_stopped = false;  // some returned hypothesis ended with the stop token
    for (const auto& [lp, es] : {std::pair{1.0f, ES::kFalse}, std::pair{2.0f, ES::kNever},
                                 std::pair{0.5f, ES::kTrue}, std::pair{-1.0f, ES::kNever}}) {
      SCOPED_TRACE(std::string(text) + " lp " + std::to_string(lp));
      const std::vector<Hyp> want = reference_beam_search(*fresh, prompt, 4, 6, stop_token, lp, es);
      GenerateRequest r = beam_request("s4", prompt, 4, 4, 6, /*ignore_eos=*/true, lp, es);
      r.stop.stop_token_ids = {stop_token};
      const auto got = run(*e, std::move(r));
      ASSERT_EQ(got.size(), 4u);
      ASSERT_GE(want.size(), 4u);
      for (int32_t i = 0; i < 4; ++i) {
        const Sink::Out& o = got.at(i);
        EXPECT_EQ(o.tokens, want[static_cast<size_t>(i)].tokens) << "beam " << i;
        ASSERT_TRUE(o.final_output.beam_cumulative_logprob.has_value());
        EXPECT_NEAR(*o.final_output.beam_cumulative_logprob, want[static_cast<size_t>(i)].cum,
                    2e-3);
        if (o.final_output.stop_token_id == stop_token) any_stopped = true;
      }
    }
    EXPECT_TRUE(any_stopped) << "no returned hypothesis ended with the stop token";
  }
}

INSTANTIATE_TEST_SUITE_P(Models, BeamSearch, ::testing::Values("demo", "llama-Q8_0.gguf"));

// Speculative decoding on: beams advance one ranked token per step, so they take no drafts (a
// draft accepted greedily would skip the ranking across beams). A repetitive prompt makes prompt
// lookup propose at every step; the beams must equal those of an engine without speculation.
TEST(BeamSearchSpeculation, BeamsTakeNoDrafts) {
  EngineConfig plain_config = config("demo");
  EngineConfig spec_config = config("demo");
  spec_config.speculative.method = "ngram";
  spec_config.speculative.disable_batch_tokens = 0;  // never off for batch size
  auto plain = make_engine(plain_config);
  auto spec = make_engine(spec_config);
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(spec, nullptr);
  const std::vector<int32_t> prompt =
      prompt_of(*plain,
                "Once upon a time there was a cat. Once upon a time there was a cat. Once "
                "upon a time there was a cat. Once upon a time");
  const auto want = run(*plain, beam_request("p", prompt, 4, 4, 12, true));
  const auto got = run(*spec, beam_request("s", prompt, 4, 4, 12, true));
  ASSERT_EQ(want.size(), 4u);
  ASSERT_EQ(got.size(), 4u);
  for (int32_t i = 0; i < 4; ++i)
    EXPECT_EQ(got.at(i).tokens, want.at(i).tokens) << "beam " << i;
  EXPECT_EQ(spec->stats().spec_decode_num_draft_tokens, 0);
}

// Beams share the prompt's blocks: on a 100-token prompt, 4 beams hold far fewer blocks at
// peak than 4 independent sequences (distinct cache salts: nothing shared).
TEST(BeamSearchKv, SharesBlocks) {
  std::vector<int32_t> prompt;
  {
    auto e = make_engine(config("demo"));
    ASSERT_NE(e, nullptr);
    std::string text;
    while (prompt.size() < 100) {
      text += "Once upon a time there was a little girl who liked to play in the park. ";
      prompt = e->tokenize(text, true, false);
    }
    prompt.resize(100);
  }
  int64_t beam_peak = 0, independent_peak = 0;
  {
    auto e = make_engine(config("demo"));
    ASSERT_NE(e, nullptr);
    run(*e, beam_request("b", prompt, 4, 1, 8, true));
    beam_peak = e->stats().peak_used_blocks;
    EXPECT_EQ(e->stats().num_used_blocks, 0);
  }
  {
    auto e = make_engine(config("demo"));
    ASSERT_NE(e, nullptr);
    std::vector<std::unique_ptr<Sink>> sinks;
    for (int i = 0; i < 4; ++i) {
      GenerateRequest r;
      r.request_id = "i" + std::to_string(i);
      r.prompt_tokens = prompt;
      r.sampling.temperature = 0.0f;
      r.stop.max_tokens = 8;
      r.stop.ignore_eos = true;
      r.cache_salt = "salt" + std::to_string(i);
      sinks.push_back(std::make_unique<Sink>());
      ASSERT_TRUE(e->add_request(std::move(r), sinks.back()->callback()).ok());
    }
    for (auto& s : sinks)
      s->wait(1);
    independent_peak = e->stats().peak_used_blocks;
  }
  // 100 + 8 tokens: 7 blocks each alone; 4 beams: 6 shared prompt blocks + 4 tails.
  EXPECT_EQ(independent_peak, 4 * 7);
  EXPECT_LE(beam_peak, 6 + 4 * 2);
  EXPECT_GT(beam_peak, 6);
}

// A beam request is not preempted: when the cache cannot hold two of them, one fails with a
// clear error and the other still returns exactly its solo result; one that could never fit is
// refused when added.
TEST(BeamSearchKv, FailsCleanlyInsteadOfPreemption) {
  // Size the cache in blocks: bytes per block from a first engine.
  uint64_t bytes_per_block = 0;
  std::vector<std::vector<int32_t>> prompts;
  {
    auto e = make_engine(config("demo"));
    ASSERT_NE(e, nullptr);
    bytes_per_block = (32ull << 20) / static_cast<uint64_t>(e->stats().num_blocks);
    for (const char* text : {"Once upon a time there was a big red ball that liked to roll.",
                             "The cat sat on the mat and looked at the bird in the tree.",
                             "Lily and Ben went to the beach with their mom and dad today."}) {
      prompts.push_back(e->tokenize(text, true, false));
    }
  }
  EngineConfig c = config("demo");
  c.kv_cache_bytes = bytes_per_block * 35;
  c.max_model_len = 128;
  auto e = make_engine(c);
  ASSERT_NE(e, nullptr);
  const int64_t blocks = e->stats().num_blocks;
  ASSERT_LE(blocks, 35);
  // max_tokens 100: one request alone may need blocks(prompt) + 4 x (7 + 1) <= 34 blocks.
  std::vector<std::map<int32_t, Sink::Out>> solo;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_LE(static_cast<int64_t>(prompts[i].size()), 32);
    solo.push_back(run(*e, beam_request("solo", prompts[i], 4, 2, 100, true)));
    ASSERT_EQ(solo.back().at(0).final_output.finish_reason, FinishReason::kLength);
  }
  std::vector<std::unique_ptr<Sink>> sinks;
  for (size_t i = 0; i < prompts.size(); ++i) {
    sinks.push_back(std::make_unique<Sink>());
    ASSERT_TRUE(e->add_request(beam_request("r" + std::to_string(i), prompts[i], 4, 2, 100, true),
                               sinks.back()->callback())
                    .ok());
  }
  int failed = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto o = sinks[i]->wait(2);
    if (o.at(0).final_output.finish_reason == FinishReason::kError) {
      ++failed;
      EXPECT_NE(o.at(0).final_output.error.find("beam-search request is not preempted"),
                std::string::npos)
          << o.at(0).final_output.error;
      EXPECT_EQ(o.at(1).final_output.finish_reason, FinishReason::kError);
    } else {
      EXPECT_EQ(o.at(0).tokens, solo[i].at(0).tokens) << "request " << i;
      EXPECT_EQ(o.at(1).tokens, solo[i].at(1).tokens) << "request " << i;
    }
  }
  EXPECT_GE(failed, 1) << "three requests of up to 34 blocks each in " << blocks;
  EXPECT_LT(failed, 3);
  EXPECT_TRUE(e->wait_idle(std::chrono::seconds(30)));
  EXPECT_EQ(e->stats().num_used_blocks, 0);
  // Could never fit: refused up front, naming the sizes.
  Sink s3;
  const Status st = e->add_request(beam_request("big", prompts[0], 8, 1, 100, true), s3.callback());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("KV blocks"), std::string::npos) << st.to_string();
}

// Two beam requests batched with a greedy one whose prompt is chunked to the few tokens a budget
// of 8 leaves after the beams' decodes: every request returns exactly what it returns alone.
TEST(BeamSearchKv, BatchedUnderASmallBudgetEqualsSolo) {
  EngineConfig c = config("demo");
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = 8;
  auto e = make_engine(c);
  ASSERT_NE(e, nullptr);
  std::vector<std::vector<int32_t>> prompts;
  for (const char* text : {"Once upon a time there was a little girl named Lily.",
                           "The big brown dog ran to the park to play with a red ball.",
                           "Tom had a toy car that he loved very much."}) {
    prompts.push_back(e->tokenize(text, true, false));
  }
  std::vector<std::map<int32_t, Sink::Out>> solo_beam;
  std::vector<std::vector<int32_t>> solo_greedy;
  for (size_t i = 0; i < 2; ++i)
    solo_beam.push_back(run(*e, beam_request("solo", prompts[i], 3, 3, 10, true)));
  solo_greedy.push_back(greedy(*e, prompts[2], 16, true));
  std::vector<std::unique_ptr<Sink>> sinks;
  for (size_t i = 0; i < 2; ++i) {
    sinks.push_back(std::make_unique<Sink>());
    ASSERT_TRUE(e->add_request(beam_request("b" + std::to_string(i), prompts[i], 3, 3, 10, true),
                               sinks.back()->callback())
                    .ok());
  }
  GenerateRequest g;
  g.request_id = "g";
  g.prompt_tokens = prompts[2];
  g.sampling.temperature = 0.0f;
  g.stop.max_tokens = 16;
  g.stop.ignore_eos = true;
  sinks.push_back(std::make_unique<Sink>());
  ASSERT_TRUE(e->add_request(std::move(g), sinks.back()->callback()).ok());
  for (size_t i = 0; i < 2; ++i) {
    const auto o = sinks[i]->wait(3);
    for (int32_t k = 0; k < 3; ++k)
      EXPECT_EQ(o.at(k).tokens, solo_beam[i].at(k).tokens) << "request " << i << " beam " << k;
  }
  EXPECT_EQ(sinks[2]->wait(1).at(0).tokens, solo_greedy[0]);
  EXPECT_TRUE(e->wait_idle(std::chrono::seconds(30)));
  EXPECT_EQ(e->stats().num_used_blocks, 0);
}

TEST(BeamSearchKv, RefusesUnsupportedFieldsByName) {
  auto e = make_engine(config("demo"));
  ASSERT_NE(e, nullptr);
  const std::vector<int32_t> prompt = prompt_of(*e, "Hello");
  const auto refused = [&](GenerateRequest r, const std::string& field) {
    Sink s;
    const Status st = e->add_request(std::move(r), s.callback());
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << field;
    EXPECT_NE(st.message().find(field), std::string::npos) << st.to_string();
  };
  GenerateRequest r = beam_request("x", prompt, 2, 1, 4, true, false);
  r.sampling.temperature = 0.7f;
  refused(r, "temperature");
  r = beam_request("x", prompt, 2, 3, 4, true, false);
  refused(r, "n must be");
  r = beam_request("x", prompt, 2, 1, 4, true, false);
  r.stop.stop_strings = {"."};
  refused(r, "stop");
  r = beam_request("x", prompt, 2, 1, 4, true, false);
  r.sampling.logprobs = 2;
  refused(r, "logprobs");
  r = beam_request("x", prompt, 11, 1, 4, true, false);
  refused(r, "beam_width");
}

}  // namespace
}  // namespace pagoda
