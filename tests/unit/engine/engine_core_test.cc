// EngineCore with a FakeExecutor and the tiny tokenizer: outputs equal the fake model's reference
// generation (tokens) and Tokenizer::decode of them (text); n > 1 samples; many threads adding
// and aborting concurrently (every sample gets exactly one final output, nothing after it, no
// deadlock, KV back to empty); shutdown with requests in flight; runner failures; loop death;
// validation; queue bound; stop strings; prefix-cache accounting.
#include "engine/engine_core.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "fake_executor.h"
#include "harness.h"
#include "tiny_tokenizer.h"
#include "tokenizer/utf8.h"

namespace pagoda::engine {
namespace {

using testing::FakeExecutor;
using testing::kTinyBos;
using testing::kTinyEos;
using testing::kVocab;
using testing::make_prompt;
using testing::sample_token;

// The FakeExecutor's output table here: every tiny-vocab word piece, a few byte tokens that split
// UTF-8 characters, EOS once (kVocab entries).
const std::vector<TokenId>& fake_output_table(const tokenizer::Tokenizer& t) {
  static const std::vector<TokenId> table = [&t] {
    std::vector<TokenId> v;
    for (const std::string& w : testing::tiny_words())
      v.push_back(*t.find_token(w));
    for (const uint8_t b : {0xC3, 0xA9, 0xE4, 0xB8, 0x96})
      v.push_back(testing::byte_token(b));
    v.push_back(kTinyEos);
    for (int i = 0; static_cast<int>(v.size()) < kVocab; ++i) {
      const auto& words = testing::tiny_words();
      v.push_back(*t.find_token(words[static_cast<size_t>(i) % words.size()]));
    }
    return v;
  }();
  return table;
}

// What sample `index` of a request generates through that table (EOS stops unless ignore_eos).
std::vector<TokenId> fake_reference(const std::vector<TokenId>& table,
                                    const std::vector<TokenId>& prompt, int32_t max_tokens,
                                    int32_t index, bool ignore_eos = false) {
  std::vector<TokenId> seq = prompt;
  std::vector<TokenId> out;
  while (static_cast<int32_t>(out.size()) < max_tokens) {
    const TokenId t = table[static_cast<size_t>(sample_token(seq, out.empty() ? index : 0))];
    seq.push_back(t);
    out.push_back(t);
    if (t == kTinyEos && !ignore_eos) break;
  }
  return out;
}

// Collects outputs from the engine thread; flags protocol violations.
class Collector {
 public:
  OutputCallback callback() {
    return [this](RequestOutput o) { add(std::move(o)); };
  }
  void add(RequestOutput o) {
    std::lock_guard<std::mutex> l(mu_);
    threads_.insert(std::this_thread::get_id());
    auto& seq = seqs_[{o.request_id, o.index}];
    if (seq.finished) ++violations_;  // output after the final one
    seq.tokens.insert(seq.tokens.end(), o.new_token_ids.begin(), o.new_token_ids.end());
    if (!tokenizer::utf8::is_valid(o.text_delta)) ++violations_;
    seq.text += o.text_delta;
    seq.logprobs += o.logprobs.size();
    if (o.finished) {
      seq.finished = true;
      seq.final_output = o;
      ++num_finals_;
    }
    cv_.notify_all();
  }
  struct Seq {
    std::vector<int32_t> tokens;
    std::string text;
    size_t logprobs = 0;
    bool finished = false;
    RequestOutput final_output;
  };
  std::map<std::pair<std::string, int32_t>, Seq> seqs() const {
    std::lock_guard<std::mutex> l(mu_);
    return seqs_;
  }
  int violations() const {
    std::lock_guard<std::mutex> l(mu_);
    return violations_;
  }
  int64_t num_finals() const {
    std::lock_guard<std::mutex> l(mu_);
    return num_finals_;
  }
  bool wait_finals(int64_t n) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::seconds(60), [&] { return num_finals_ >= n; });
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard<std::mutex> l(mu_);
    return threads_;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<std::string, int32_t>, Seq> seqs_;
  std::set<std::thread::id> threads_;
  int violations_ = 0;
  int64_t num_finals_ = 0;
};

class EngineCoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tok_ = testing::make_tiny_tokenizer();
    table_ = fake_output_table(*tok_);
  }

  EngineCoreConfig config(int32_t num_blocks, int32_t block_size, int32_t budget,
                          int32_t max_seqs) {
    EngineCoreConfig c;
    c.scheduler.max_num_seqs = max_seqs;
    c.scheduler.max_num_batched_tokens = budget;
    c.scheduler.kv.num_blocks = num_blocks;
    c.scheduler.kv.block_size = block_size;
    c.eos_token_ids = {kTinyEos};
    c.vocab_size = tok_->num_tokens();
    return c;
  }

  std::unique_ptr<EngineCore> start(const EngineCoreConfig& c) {
    auto exec = std::make_unique<FakeExecutor>(c.scheduler.kv.num_blocks, c.scheduler.kv.block_size,
                                               table_);
    exec_ = exec.get();
    auto core = EngineCore::create(c, std::move(exec), *tok_);
    EXPECT_TRUE(core.ok()) << core.status().to_string();
    return std::move(core).value();
  }

  // A prompt of tiny-vocab ids (BOS + words).
  std::vector<int32_t> prompt(int n, uint32_t seed) {
    std::vector<int32_t> p = {kTinyBos};
    for (const int32_t raw : make_prompt(n - 1, seed)) {
      const int32_t t = table_[static_cast<size_t>(raw)];
      p.push_back(t == kTinyEos ? table_[0] : t);  // no EOS inside prompts
    }
    return p;
  }

  GenerateRequest request(std::string id, std::vector<int32_t> p, int32_t max_tokens,
                          int32_t n = 1) {
    GenerateRequest r;
    r.request_id = std::move(id);
    r.prompt_tokens = std::move(p);
    r.stop.max_tokens = max_tokens;
    r.n = n;
    return r;
  }

  // Text the sample should stream: decode of its tokens, without a final EOS. decode() drops the
  // first token's leading space, which the stream does only when the prompt has no text (here:
  // a lone BOS); after a text prompt a leading control token takes that slot.
  std::string expected_text(const std::vector<int32_t>& p, std::vector<int32_t> tokens,
                            bool finished_on_eos) {
    if (finished_on_eos && !tokens.empty()) tokens.pop_back();
    std::vector<int32_t> all;
    all.reserve(tokens.size() + 1);
    if (p.size() > 1) all.push_back(kTinyBos);
    for (const int32_t t : tokens)
      all.push_back(t);
    return tokenizer::utf8::sanitize(tok_->decode(all, false));
  }

  void expect_reference(const Collector::Seq& s, const std::vector<int32_t>& p, int32_t max_tokens,
                        int32_t index) {
    const std::vector<int32_t> want = fake_reference(table_, p, max_tokens, index);
    EXPECT_EQ(s.tokens, want);
    const bool eos = !want.empty() && want.back() == kTinyEos;
    EXPECT_EQ(s.final_output.finish_reason,
              eos ? pagoda::FinishReason::kStop : pagoda::FinishReason::kLength);
    if (eos) {
      EXPECT_EQ(s.final_output.stop_token_id, kTinyEos);
    }
    EXPECT_EQ(s.text, expected_text(p, s.tokens, eos));
    EXPECT_EQ(s.final_output.usage.completion_tokens, static_cast<int32_t>(want.size()));
    EXPECT_EQ(s.final_output.usage.prompt_tokens, static_cast<int32_t>(p.size()));
  }

  void expect_idle(EngineCore& core) {
    ASSERT_TRUE(core.wait_idle(std::chrono::seconds(60)));
    const EngineStats s = core.stats();
    EXPECT_EQ(s.num_running, 0);
    EXPECT_EQ(s.num_waiting, 0);
    EXPECT_EQ(s.num_used_blocks, 0);
    EXPECT_EQ(s.kv_cache_usage, 0.0);
    EXPECT_TRUE(s.loop_alive);
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
  std::vector<int32_t> table_;
  FakeExecutor* exec_ = nullptr;
};

TEST_F(EngineCoreTest, RequestsMatchTheReferenceOnTheEngineThread) {
  auto core = start(config(64, 4, 32, 8));
  Collector c;
  std::map<std::string, std::pair<std::vector<int32_t>, int32_t>> reqs;
  for (int i = 0; i < 12; ++i) {
    const std::string id = "r" + std::to_string(i);
    auto p = prompt(1 + i * 5, static_cast<uint32_t>(i));
    const int32_t max_tokens = 1 + i * 3;
    reqs[id] = {p, max_tokens};
    GenerateRequest r = request(id, p, max_tokens);
    r.sampling.logprobs = i % 2 == 0 ? 0 : -1;
    ASSERT_TRUE(core->add_request(std::move(r), c.callback()).ok());
  }
  expect_idle(*core);
  EXPECT_EQ(c.violations(), 0);
  const auto seqs = c.seqs();
  ASSERT_EQ(seqs.size(), reqs.size());
  for (const auto& [id, pr] : reqs) {
    SCOPED_TRACE(id);
    const auto& s = seqs.at({id, 0});
    expect_reference(s, pr.first, pr.second, 0);
    const bool wants_logprobs = std::stoi(id.substr(1)) % 2 == 0;
    EXPECT_EQ(s.logprobs, wants_logprobs ? s.tokens.size() : 0u);
    const RequestTimings& t = s.final_output.timings;
    EXPECT_LE(t.queue_seconds, t.e2e_seconds);
    EXPECT_LE(t.ttft_seconds, t.e2e_seconds);
  }
  const auto threads = c.threads();
  ASSERT_EQ(threads.size(), 1u);  // every callback on the one engine thread
  EXPECT_NE(*threads.begin(), std::this_thread::get_id());
  const EngineStats st = core->stats();
  EXPECT_EQ(st.requests_finished_total, 12);
  EXPECT_GT(st.num_steps, 0);
  EXPECT_GT(st.sum_used_blocks, 0);
  EXPECT_LE(st.sum_live_tokens, st.sum_used_blocks * 4);
}

TEST_F(EngineCoreTest, NSamplesCarryTheirIndex) {
  auto core = start(config(64, 4, 32, 8));
  Collector c;
  const auto p = prompt(13, 77);
  ASSERT_TRUE(core->add_request(request("multi", p, 9, 3), c.callback()).ok());
  expect_idle(*core);
  const auto seqs = c.seqs();
  ASSERT_EQ(seqs.size(), 3u);
  for (int32_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    expect_reference(seqs.at({"multi", i}), p, 9, i);
  }
  EXPECT_EQ(c.num_finals(), 3);
}

TEST_F(EngineCoreTest, ManyThreadsAddingAndAbortingConcurrently) {
  // A small cache (preemptions), small budget (chunked prefill), a slow-ish executor.
  auto core = start(config(48, 4, 24, 8));
  exec_->delay_us = 50;
  Collector c;
  struct Sent {
    std::vector<int32_t> prompt;
    int32_t max_tokens;
    int32_t n;
  };
  std::mutex sent_mu;
  std::map<std::string, Sent> sent;
  std::atomic<int> rejected{0};
  constexpr int kThreads = 6;
  constexpr int kPerThread = 30;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<uint32_t>(t) * 7919u + 1);
      for (int i = 0; i < kPerThread; ++i) {
        const std::string id = "t" + std::to_string(t) + "-" + std::to_string(i);
        Sent s{prompt(1 + static_cast<int>(rng() % 40), rng()),
               1 + static_cast<int32_t>(rng() % 24), 1 + static_cast<int32_t>(rng() % 3)};
        GenerateRequest r = request(id, s.prompt, s.max_tokens, s.n);
        // Some requests abort themselves from their own callback after a few tokens.
        OutputCallback cb = c.callback();
        if (rng() % 5 == 0) {
          auto count = std::make_shared<int>(0);
          cb = [&c, &core, count, id](RequestOutput o) {
            const bool finished = o.finished;
            c.add(std::move(o));
            if (!finished && ++*count == 3) core->abort(id);
          };
        }
        {
          std::lock_guard<std::mutex> l(sent_mu);
          sent[id] = s;
        }
        const Status st = core->add_request(std::move(r), cb);
        if (!st.ok()) {
          ++rejected;
          ADD_FAILURE() << st.to_string();
        }
        // Abort an earlier request of any thread, sometimes one that does not exist.
        if (rng() % 4 == 0) {
          const int victim_thread = static_cast<int>(rng() % kThreads);
          const int victim = static_cast<int>(rng() % (kPerThread + 5));
          core->abort("t" + std::to_string(victim_thread) + "-" + std::to_string(victim));
        }
        if (rng() % 8 == 0) (void)core->stats();
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      }
    });
  }
  for (auto& th : threads)
    th.join();
  expect_idle(*core);
  EXPECT_EQ(rejected.load(), 0);
  EXPECT_EQ(c.violations(), 0);
  const auto seqs = c.seqs();
  int64_t expected_finals = 0;
  int aborted = 0;
  for (const auto& [id, s] : sent) {
    expected_finals += s.n;
    for (int32_t i = 0; i < s.n; ++i) {
      SCOPED_TRACE(id + " sample " + std::to_string(i));
      const auto it = seqs.find({id, i});
      ASSERT_NE(it, seqs.end());
      ASSERT_TRUE(it->second.finished);
      const auto want = fake_reference(table_, s.prompt, s.max_tokens, i);
      if (it->second.final_output.finish_reason == pagoda::FinishReason::kAbort) {
        ++aborted;
        ASSERT_LE(it->second.tokens.size(), want.size());
        EXPECT_TRUE(std::equal(it->second.tokens.begin(), it->second.tokens.end(), want.begin()));
      } else {
        expect_reference(it->second, s.prompt, s.max_tokens, i);
      }
    }
  }
  EXPECT_EQ(c.num_finals(), expected_finals);
  EXPECT_GT(aborted, 0);
  const EngineStats st = core->stats();
  EXPECT_EQ(st.requests_finished_total, expected_finals);
  RecordProperty("preemptions", static_cast<int>(st.num_preemptions));
}

TEST_F(EngineCoreTest, ShutdownWithRequestsInFlight) {
  auto core = start(config(64, 4, 16, 4));
  exec_->delay_us = 200;
  Collector c;
  int64_t total = 0;
  for (int i = 0; i < 40; ++i) {
    const int32_t n = 1 + i % 2;
    total += n;
    ASSERT_TRUE(
        core->add_request(request("s" + std::to_string(i), prompt(8, i), 30, n), c.callback())
            .ok());
  }
  exec_->wait_entered(2);
  core->shutdown();
  EXPECT_EQ(c.num_finals(), total);  // delivered before shutdown returned
  EXPECT_EQ(c.violations(), 0);
  int aborted = 0;
  for (const auto& [key, s] : c.seqs())
    aborted += s.final_output.finish_reason == pagoda::FinishReason::kAbort;
  EXPECT_GT(aborted, 0);
  const Status st = core->add_request(request("late", prompt(3, 1), 2), c.callback());
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
  core->shutdown();  // idempotent
}

// Issue 40: every preemption is logged at info with the request id and the reason.
TEST_F(EngineCoreTest, PreemptionsAreLoggedWithTheRequestIdAndReason) {
  std::ostringstream captured;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(captured);
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("capture", sink);
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);
  const auto old_level = spdlog::get_level();
  spdlog::set_level(spdlog::level::info);
  int64_t preemptions = 0;
  {
    // 6 blocks of 4 tokens: two requests that each grow to 5 blocks cannot both stay.
    auto core = start(config(6, 4, 64, 4));
    Collector c;
    ASSERT_TRUE(core->add_request(request("first", prompt(6, 1), 14), c.callback()).ok());
    ASSERT_TRUE(core->add_request(request("second", prompt(6, 2), 14), c.callback()).ok());
    ASSERT_TRUE(c.wait_finals(2));
    preemptions = core->stats().num_preemptions;
    core->shutdown();
  }
  spdlog::set_default_logger(previous);
  spdlog::set_level(old_level);
  ASSERT_GT(preemptions, 0);
  const std::string log = captured.str();
  EXPECT_NE(log.find("preempted request '"), std::string::npos) << log;
  EXPECT_NE(log.find("reason: kv_cache_full"), std::string::npos) << log;
  EXPECT_TRUE(log.find("'first'") != std::string::npos || log.find("'second'") != std::string::npos)
      << log;
}

TEST_F(EngineCoreTest, DestructorShutsDownAnIdleOrBusyCore) {
  { auto idle = start(config(16, 4, 16, 4)); }
  Collector c;
  {
    auto busy = start(config(64, 4, 16, 4));
    exec_->delay_us = 100;
    for (int i = 0; i < 10; ++i)
      ASSERT_TRUE(
          busy->add_request(request("d" + std::to_string(i), prompt(5, i), 20), c.callback()).ok());
  }
  EXPECT_EQ(c.num_finals(), 10);
}

TEST_F(EngineCoreTest, ExecutorFailureFinishesThatPlanWithErrorAndTheLoopGoesOn) {
  auto core = start(config(64, 4, 64, 8));
  exec_->fail_call = 3;
  Collector c;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(
        core->add_request(request("f" + std::to_string(i), prompt(6, i), 10, i == 0 ? 2 : 1),
                          c.callback())
            .ok());
  ASSERT_TRUE(c.wait_finals(5));
  int errors = 0;
  for (const auto& [key, s] : c.seqs()) {
    if (s.final_output.finish_reason == pagoda::FinishReason::kError) {
      ++errors;
      EXPECT_NE(s.final_output.error.find("injected executor failure"), std::string::npos);
    }
  }
  EXPECT_GT(errors, 0);
  // The loop survives: a later request completes normally.
  const auto p = prompt(7, 99);
  ASSERT_TRUE(core->add_request(request("after", p, 5), c.callback()).ok());
  expect_idle(*core);
  expect_reference(c.seqs().at({"after", 0}), p, 5, 0);
  EXPECT_TRUE(core->stats().loop_alive);
}

// A SamplingGate (a grammar compiling in the background) holds back the first sample only: the
// prompt is computed meanwhile, all but its last token; once the gate opens the request
// generates exactly what it would have without one.
TEST_F(EngineCoreTest, GatedRequestComputesItsPromptAndSamplesOnceTheGateOpens) {
  auto core = start(config(64, 4, 8, 8));
  auto open = std::make_shared<std::atomic<bool>>(false);
  auto polls = std::make_shared<std::atomic<int>>(0);
  SamplingGate gate = [open, polls]() -> std::optional<Status> {
    ++*polls;
    if (!open->load()) return std::nullopt;
    return Status();
  };
  Collector c;
  const auto p = prompt(21, 5);  // three chunks of the 8-token budget before the gate matters
  ASSERT_TRUE(core->add_request(request("g", p, 6), c.callback(), gate).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (core->stats().prompt_tokens_computed < static_cast<int64_t>(p.size()) - 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int polls_then = polls->load();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(core->stats().prompt_tokens_computed, static_cast<int64_t>(p.size()) - 1);
  EXPECT_GT(polls->load(), polls_then);  // still polled while it waits
  EXPECT_EQ(c.num_finals(), 0);
  EXPECT_TRUE(c.seqs().empty());  // nothing sampled
  // Another request is not held up by the gated one.
  const auto q = prompt(5, 8);
  ASSERT_TRUE(core->add_request(request("free", q, 4), c.callback()).ok());
  ASSERT_TRUE(c.wait_finals(1));
  expect_reference(c.seqs().at({"free", 0}), q, 4, 0);
  open->store(true);
  ASSERT_TRUE(c.wait_finals(2));
  expect_reference(c.seqs().at({"g", 0}), p, 6, 0);
  expect_idle(*core);
  EXPECT_EQ(c.violations(), 0);
}

// A gate that fails ends every sample of its request with kError and the gate's code and
// message; requests around it go on.
TEST_F(EngineCoreTest, FailedGateFailsItsRequestWithTheGatesCode) {
  auto core = start(config(64, 4, 64, 8));
  auto verdict = std::make_shared<std::atomic<bool>>(false);
  SamplingGate gate = [verdict]() -> std::optional<Status> {
    if (!verdict->load()) return std::nullopt;
    return invalid_argument("grammar: no text satisfies it");
  };
  Collector c;
  ASSERT_TRUE(core->add_request(request("bad", prompt(9, 1), 6, 3), c.callback(), gate).ok());
  const auto q = prompt(6, 2);
  ASSERT_TRUE(core->add_request(request("good", q, 5), c.callback()).ok());
  ASSERT_TRUE(c.wait_finals(1));
  verdict->store(true);
  ASSERT_TRUE(c.wait_finals(4));
  const auto seqs = c.seqs();
  for (int32_t i = 0; i < 3; ++i) {
    const Collector::Seq& s = seqs.at({"bad", i});
    EXPECT_TRUE(s.tokens.empty());
    EXPECT_EQ(s.final_output.finish_reason, pagoda::FinishReason::kError);
    EXPECT_EQ(s.final_output.error_code, StatusCode::kInvalidArgument);
    EXPECT_EQ(s.final_output.error, "grammar: no text satisfies it");
  }
  expect_reference(seqs.at({"good", 0}), q, 5, 0);
  expect_idle(*core);
  EXPECT_EQ(c.violations(), 0);
}

TEST_F(EngineCoreTest, LoopDeathFailsEveryRequestAndIsReported) {
  auto core = start(config(64, 4, 64, 8));
  exec_->throw_call = 2;
  Collector c;
  exec_->close_gate();  // all three are in before the loop can die
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(
        core->add_request(request("x" + std::to_string(i), prompt(6, i), 10, i + 1), c.callback())
            .ok());
  exec_->open_gate();
  ASSERT_TRUE(c.wait_finals(6));
  ASSERT_TRUE(core->wait_idle(std::chrono::seconds(60)));
  for (const auto& [key, s] : c.seqs()) {
    EXPECT_EQ(s.final_output.finish_reason, pagoda::FinishReason::kError);
    EXPECT_NE(s.final_output.error.find("loop died"), std::string::npos);
  }
  EXPECT_FALSE(core->stats().loop_alive);
  const Status st = core->add_request(request("late", prompt(3, 1), 2), c.callback());
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_EQ(c.violations(), 0);
}

TEST_F(EngineCoreTest, StopAcceptingThenDrain) {
  auto core = start(config(64, 4, 32, 8));
  exec_->delay_us = 100;
  Collector c;
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(
        core->add_request(request("w" + std::to_string(i), prompt(5, i), 12), c.callback()).ok());
  core->stop_accepting();
  EXPECT_EQ(core->add_request(request("no", prompt(3, 1), 2), c.callback()).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(core->wait_idle(std::chrono::seconds(60)));
  EXPECT_EQ(c.num_finals(), 6);
  for (const auto& [key, s] : c.seqs())
    EXPECT_NE(s.final_output.finish_reason, pagoda::FinishReason::kAbort);
}

TEST_F(EngineCoreTest, ValidationNamesTheField) {
  auto core = start(config(16, 4, 16, 4));
  Collector c;
  const auto message = [&](GenerateRequest r) {
    const Status s = core->add_request(std::move(r), c.callback());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    return s.message();
  };
  EXPECT_NE(message(request("", prompt(3, 1), 2)).find("request_id"), std::string::npos);
  EXPECT_NE(message(request("a", {}, 2)).find("prompt_tokens"), std::string::npos);
  EXPECT_NE(message(request("a", {1, tok_->num_tokens()}, 2)).find("prompt_tokens[1]"),
            std::string::npos);
  EXPECT_NE(message(request("a", {1, -3}, 2)).find("prompt_tokens[1]"), std::string::npos);
  EXPECT_NE(message(request("a", prompt(3, 1), 0)).find("max_tokens"), std::string::npos);
  EXPECT_NE(message(request("a", prompt(3, 1), 2, 0)).find("n "), std::string::npos);
  EXPECT_NE(message(request("a", prompt(3, 1), 2, 5)).find("max_num_seqs"), std::string::npos);
  GenerateRequest bad_stop = request("a", prompt(3, 1), 2);
  bad_stop.stop.stop_strings = {"x", ""};
  EXPECT_NE(message(bad_stop).find("stop_strings[1]"), std::string::npos);
  GenerateRequest bad_stop_id = request("a", prompt(3, 1), 2);
  bad_stop_id.stop.stop_token_ids = {5, 1 << 20};
  EXPECT_NE(message(bad_stop_id).find("stop_token_ids[1]"), std::string::npos);
  EXPECT_NE(message(request("a", prompt(40, 1), 40)).find("KV blocks"), std::string::npos);

  // A live id cannot be reused; a finished one can.
  exec_->close_gate();
  ASSERT_TRUE(core->add_request(request("dup", prompt(3, 1), 2), c.callback()).ok());
  EXPECT_NE(message(request("dup", prompt(3, 1), 2)).find("already in use"), std::string::npos);
  exec_->open_gate();
  ASSERT_TRUE(core->wait_idle(std::chrono::seconds(60)));
  EXPECT_TRUE(core->add_request(request("dup", prompt(3, 1), 2), c.callback()).ok());
  ASSERT_TRUE(core->wait_idle(std::chrono::seconds(60)));
}

TEST_F(EngineCoreTest, QueueFullIsResourceExhausted) {
  EngineCoreConfig cfg = config(64, 4, 16, 1);  // one running sequence
  cfg.scheduler.max_num_waiting = 2;
  auto core = start(cfg);
  Collector c;
  exec_->close_gate();
  ASSERT_TRUE(core->add_request(request("q0", prompt(3, 1), 2), c.callback()).ok());
  exec_->wait_entered(1);  // q0 is running, the loop is inside execute()
  ASSERT_TRUE(core->add_request(request("q1", prompt(3, 2), 2), c.callback()).ok());
  ASSERT_TRUE(core->add_request(request("q2", prompt(3, 3), 2), c.callback()).ok());
  const Status full = core->add_request(request("q3", prompt(3, 4), 2), c.callback());
  EXPECT_EQ(full.code(), StatusCode::kResourceExhausted);
  exec_->open_gate();
  expect_idle(*core);
  EXPECT_EQ(c.num_finals(), 3);
}

TEST_F(EngineCoreTest, AbortWhileWaitingEndsEverySample) {
  auto core = start(config(64, 4, 16, 1));
  Collector c;
  exec_->close_gate();
  ASSERT_TRUE(core->add_request(request("run", prompt(3, 1), 3), c.callback()).ok());
  exec_->wait_entered(1);
  ASSERT_TRUE(core->add_request(request("wait", prompt(3, 2), 3, 1), c.callback()).ok());
  core->abort("wait");
  core->abort("nobody");
  exec_->open_gate();
  expect_idle(*core);
  const auto seqs = c.seqs();
  EXPECT_EQ(seqs.at({"wait", 0}).final_output.finish_reason, pagoda::FinishReason::kAbort);
  EXPECT_TRUE(seqs.at({"wait", 0}).tokens.empty());
  EXPECT_NE(seqs.at({"run", 0}).final_output.finish_reason, pagoda::FinishReason::kAbort);
}

TEST_F(EngineCoreTest, AbortBeforeTheForkEndsAllNSamples) {
  auto core = start(config(64, 4, 16, 4));
  Collector c;
  exec_->close_gate();
  ASSERT_TRUE(core->add_request(request("n3", prompt(30, 2), 3, 3), c.callback()).ok());
  exec_->wait_entered(1);  // the first prefill chunk (16 of 30 tokens): no token sampled yet
  core->abort("n3");
  exec_->open_gate();
  expect_idle(*core);
  const auto seqs = c.seqs();
  ASSERT_EQ(seqs.size(), 3u);
  for (int32_t i = 0; i < 3; ++i)
    EXPECT_EQ(seqs.at({"n3", i}).final_output.finish_reason, pagoda::FinishReason::kAbort);
  EXPECT_EQ(c.num_finals(), 3);
}

TEST_F(EngineCoreTest, StopStringEndsTheSequenceAndFreesItsBlocks) {
  auto core = start(config(64, 4, 32, 8));
  Collector c;
  const auto p = prompt(9, 1234);
  const auto ref = fake_reference(table_, p, 40, 0, /*ignore_eos=*/true);
  const std::string full = expected_text(p, ref, false);
  ASSERT_GT(full.size(), 12u);
  // A stop string from the middle of the reference text, on character boundaries.
  size_t a = full.size() / 2;
  while (a > 0 && (static_cast<uint8_t>(full[a]) & 0xC0) == 0x80)
    --a;
  size_t b = a + 3;
  while (b < full.size() && (static_cast<uint8_t>(full[b]) & 0xC0) == 0x80)
    ++b;
  const std::string stop = full.substr(a, b - a);
  GenerateRequest r = request("stop", p, 40);
  r.stop.ignore_eos = true;
  r.stop.stop_strings = {"never-there", stop};
  ASSERT_TRUE(core->add_request(std::move(r), c.callback()).ok());
  expect_idle(*core);
  const auto seqs = c.seqs();
  const auto& s = seqs.at({"stop", 0});
  const size_t cut = full.find(stop);
  EXPECT_EQ(s.text, full.substr(0, cut));
  EXPECT_EQ(s.final_output.finish_reason, pagoda::FinishReason::kStop);
  EXPECT_EQ(s.final_output.stop_reason, stop);
  EXPECT_LT(s.tokens.size(), ref.size());
}

TEST_F(EngineCoreTest, PrefixCacheHitsAreCountedAndReported) {
  auto core = start(config(128, 4, 64, 8));
  Collector c;
  const auto p = prompt(41, 5);
  ASSERT_TRUE(core->add_request(request("first", p, 4), c.callback()).ok());
  ASSERT_TRUE(core->wait_idle(std::chrono::seconds(60)));
  ASSERT_TRUE(core->add_request(request("second", p, 4), c.callback()).ok());
  expect_idle(*core);
  const auto seqs = c.seqs();
  EXPECT_EQ(seqs.at({"first", 0}).final_output.usage.cached_tokens, 0);
  EXPECT_EQ(seqs.at({"second", 0}).final_output.usage.cached_tokens, 40);  // 10 full blocks
  expect_reference(seqs.at({"second", 0}), p, 4, 0);
  const EngineStats st = core->stats();
  EXPECT_EQ(st.prefix_cache_hits, 40);
  EXPECT_EQ(st.prompt_tokens_total, 82);
  EXPECT_EQ(st.prompt_tokens_computed, 42);
}

}  // namespace
}  // namespace pagoda::engine
