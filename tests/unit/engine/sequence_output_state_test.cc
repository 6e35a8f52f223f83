// SequenceOutputState with a real tiny SPM tokenizer: stop strings split across tokens, UTF-8
// characters split across byte tokens, include_stop_str_in_output, stop tokens, length flush,
// logprobs, usage and timings. The reference text is Tokenizer::decode of the same ids (a
// different code path from the incremental detokenizer), sanitised and cut at the first stop
// string by a naive scan.
#include "engine/sequence_output_state.h"

#include <gtest/gtest.h>

#include <random>

#include "tiny_tokenizer.h"
#include "tokenizer/utf8.h"

namespace pagoda::engine {
namespace {

using testing::byte_token;
using testing::kTinyBos;
using testing::kTinyEos;
using testing::word_token;

class SequenceOutputStateTest : public ::testing::Test {
 protected:
  void SetUp() override { tok_ = testing::make_tiny_tokenizer(); }

  std::shared_ptr<const OutputOptions> options(std::vector<std::string> stops, bool include,
                                               std::vector<TokenId> prompt = {kTinyBos}) {
    auto o = std::make_shared<OutputOptions>();
    o->request_id = "r1";
    o->include_stop_str_in_output = include;
    if (!stops.empty()) o->stop_strings = std::move(StopStringSet::create(stops)).value();
    o->prompt = std::make_shared<const std::vector<TokenId>>(std::move(prompt));
    return o;
  }

  // Feeds one token per event; the last event finishes with `finish` (if set).
  std::vector<RequestOutput> run(SequenceOutputState& s, const std::vector<TokenId>& tokens,
                                 std::optional<FinishReason> finish,
                                 std::optional<TokenId> stop_token = std::nullopt) {
    std::vector<RequestOutput> outs;
    const Clock::time_point t0 = Clock::now();
    for (size_t i = 0; i < tokens.size(); ++i) {
      RequestEvent ev;
      ev.id = 7;
      ev.new_token_ids = {tokens[i]};
      ev.num_output_tokens = static_cast<int64_t>(i + 1);
      ev.num_prompt_tokens = 1;
      ev.first_scheduled_time = t0;
      if (i + 1 == tokens.size()) {
        ev.finish_reason = finish;
        ev.stop_token_id = stop_token;
      }
      auto p = s.process(ev, Clock::now());
      outs.push_back(p.output);
      if (p.output.finished) break;
    }
    return outs;
  }

  static std::string text_of(const std::vector<RequestOutput>& outs) {
    std::string t;
    for (const auto& o : outs) {
      EXPECT_TRUE(tokenizer::utf8::is_valid(o.text_delta)) << "invalid UTF-8 delta";
      t += o.text_delta;
    }
    return t;
  }

  std::unique_ptr<tokenizer::Tokenizer> tok_;
};

TEST_F(SequenceOutputStateTest, StopStringSplitAcrossTokens) {
  const auto& t = *tok_;
  // " Hello world" as " Hel"... pieces: "▁Hello" "▁wor" "ld" "!"
  const std::vector<TokenId> ids = {word_token(t, " Hello"), word_token(t, " wor"),
                                    word_token(t, "ld"), word_token(t, "!")};
  SequenceOutputState s(t, options({"o wo"}, false), 0, Clock::now());
  auto outs = run(s, ids, std::nullopt);
  ASSERT_EQ(outs.size(), 2u);  // finished at " wor"
  // "Hello" is held back after the first token ("o" could start "o wo").
  EXPECT_EQ(outs[0].text_delta, "Hell");
  EXPECT_FALSE(outs[0].finished);
  EXPECT_EQ(outs[1].text_delta, "");
  EXPECT_TRUE(outs[1].finished);
  EXPECT_EQ(outs[1].finish_reason, pagoda::FinishReason::kStop);
  EXPECT_EQ(outs[1].stop_reason, "o wo");
  EXPECT_FALSE(outs[1].stop_token_id.has_value());
  EXPECT_EQ(outs[1].usage.completion_tokens, 2);
}

TEST_F(SequenceOutputStateTest, StopStringInsideAMultiTokenEventDropsTheTokensAfterIt) {
  // Speculative decoding delivers several tokens per event: the same four tokens as above in one
  // event end exactly where they end one per event (at " wor"), the rest discarded.
  const auto& t = *tok_;
  const std::vector<TokenId> ids = {word_token(t, " Hello"), word_token(t, " wor"),
                                    word_token(t, "ld"), word_token(t, "!")};
  SequenceOutputState one(t, options({"o wo"}, false), 0, Clock::now());
  const auto singles = run(one, ids, std::nullopt);
  SequenceOutputState s(t, options({"o wo"}, false), 0, Clock::now());
  RequestEvent ev;
  ev.new_token_ids = ids;
  ev.num_output_tokens = 4;
  ev.num_prompt_tokens = 1;
  TokenLogprobs lp;
  ev.new_logprobs.assign(4, lp);
  auto p = s.process(ev, Clock::now());
  EXPECT_TRUE(p.needs_abort);
  EXPECT_TRUE(p.output.finished);
  EXPECT_EQ(p.output.stop_reason, "o wo");
  EXPECT_EQ(p.output.new_token_ids, std::vector<TokenId>(ids.begin(), ids.begin() + 2));
  EXPECT_EQ(p.output.logprobs.size(), 2u);
  EXPECT_EQ(p.output.usage.completion_tokens, singles.back().usage.completion_tokens);
  EXPECT_EQ(p.output.text_delta, text_of(singles));
}

TEST_F(SequenceOutputStateTest, NeedsAbortOnlyWhenTheSchedulerStillRunsIt) {
  const auto& t = *tok_;
  SequenceOutputState s(t, options({"STOP"}, false), 0, Clock::now());
  RequestEvent ev;
  ev.new_token_ids = {word_token(t, "STOP")};
  ev.num_output_tokens = 1;
  auto p = s.process(ev, Clock::now());
  EXPECT_TRUE(p.needs_abort);
  EXPECT_TRUE(p.output.finished);
  EXPECT_EQ(p.output.text_delta, "");

  SequenceOutputState s2(t, options({"STOP"}, false), 0, Clock::now());
  ev.finish_reason = FinishReason::kLength;  // the same token also hit max_tokens
  auto p2 = s2.process(ev, Clock::now());
  EXPECT_FALSE(p2.needs_abort);
  EXPECT_EQ(p2.output.finish_reason, pagoda::FinishReason::kStop);
  EXPECT_EQ(p2.output.stop_reason, "STOP");
}

TEST_F(SequenceOutputStateTest, IncludeStopStringInOutput) {
  const auto& t = *tok_;
  const std::vector<TokenId> ids = {word_token(t, " the"), word_token(t, "ST"), word_token(t, "OP"),
                                    word_token(t, "a")};
  SequenceOutputState s(t, options({"STOP"}, true), 0, Clock::now());
  auto outs = run(s, ids, std::nullopt);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].text_delta, "the");
  EXPECT_EQ(outs[1].text_delta, "");  // "ST" held
  EXPECT_EQ(outs[2].text_delta, "STOP");
  EXPECT_EQ(text_of(outs), "theSTOP");
}

TEST_F(SequenceOutputStateTest, Utf8SplitAcrossByteTokens) {
  const auto& t = *tok_;
  // "é" = C3 A9, "世" = E4 B8 96, each split into byte tokens.
  const std::vector<TokenId> ids = {word_token(t, "a"), byte_token(0xC3), byte_token(0xA9),
                                    byte_token(0xE4),   byte_token(0xB8), byte_token(0x96),
                                    word_token(t, "b")};
  SequenceOutputState s(t, options({}, false), 0, Clock::now());
  auto outs = run(s, ids, FinishReason::kLength);
  ASSERT_EQ(outs.size(), ids.size());
  const std::vector<std::string> want = {"a", "", "\xc3\xa9", "", "", "\xe4\xb8\x96", "b"};
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_EQ(outs[i].text_delta, want[i]) << "token " << i;
  EXPECT_EQ(outs.back().finish_reason, pagoda::FinishReason::kLength);
}

TEST_F(SequenceOutputStateTest, StopStringWithAMultiByteCharacterSplitAcrossBytes) {
  const auto& t = *tok_;
  const std::vector<TokenId> ids = {word_token(t, "a"), byte_token(0xC3), byte_token(0xA9),
                                    word_token(t, "b"), word_token(t, "c")};
  SequenceOutputState s(t,
                        options({"\xc3\xa9"
                                 "b"},
                                false),
                        0, Clock::now());
  auto outs = run(s, ids, std::nullopt);
  ASSERT_EQ(outs.size(), 4u);
  EXPECT_EQ(text_of(outs), "a");
  EXPECT_EQ(outs.back().stop_reason,
            "\xc3\xa9"
            "b");
}

TEST_F(SequenceOutputStateTest, AnIncompleteTailBecomesReplacementAtLength) {
  const auto& t = *tok_;
  SequenceOutputState s(t, options({}, false), 0, Clock::now());
  auto outs =
      run(s, {word_token(t, "a"), byte_token(0xE4), byte_token(0xB8)}, FinishReason::kLength);
  EXPECT_EQ(text_of(outs), "a\xef\xbf\xbd");
}

TEST_F(SequenceOutputStateTest, LengthFlushesTheHeldBackPrefix) {
  const auto& t = *tok_;
  SequenceOutputState s(t, options({"xyz!"}, false), 0, Clock::now());
  auto outs =
      run(s, {word_token(t, "a"), word_token(t, "xy"), word_token(t, "z")}, FinishReason::kLength);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].text_delta, "a");
  EXPECT_EQ(outs[1].text_delta, "");
  EXPECT_EQ(outs[2].text_delta, "xyz");  // the prefix never completed
  EXPECT_EQ(outs[2].finish_reason, pagoda::FinishReason::kLength);
}

TEST_F(SequenceOutputStateTest, StopTokenTextOnlyOnRequest) {
  const auto& t = *tok_;
  const TokenId stop = word_token(t, "!");
  {
    SequenceOutputState s(t, options({}, false), 0, Clock::now());
    auto outs = run(s, {word_token(t, " the"), stop}, FinishReason::kStop, stop);
    EXPECT_EQ(text_of(outs), "the");
    EXPECT_EQ(outs.back().stop_token_id, stop);
    EXPECT_EQ(outs.back().new_token_ids, std::vector<int32_t>{stop});
    EXPECT_EQ(outs.back().usage.completion_tokens, 2);
  }
  {
    SequenceOutputState s(t, options({}, true), 0, Clock::now());
    auto outs = run(s, {word_token(t, " the"), stop}, FinishReason::kStop, stop);
    EXPECT_EQ(text_of(outs), "the!");
  }
  {  // EOS is a control token: no text either way.
    SequenceOutputState s(t, options({}, true), 0, Clock::now());
    auto outs = run(s, {word_token(t, " the"), kTinyEos}, FinishReason::kStop, kTinyEos);
    EXPECT_EQ(text_of(outs), "the");
    EXPECT_EQ(outs.back().stop_token_id, kTinyEos);
  }
}

TEST_F(SequenceOutputStateTest, LeadingSpaceKeptAfterATextPrompt) {
  const auto& t = *tok_;
  SequenceOutputState s(t, options({}, false, {kTinyBos, word_token(t, " Hello")}), 0,
                        Clock::now());
  auto outs = run(s, {word_token(t, " world")}, FinishReason::kLength);
  EXPECT_EQ(text_of(outs), " world");
}

TEST_F(SequenceOutputStateTest, LogprobsUsageAndTimings) {
  const auto& t = *tok_;
  const Clock::time_point arrival = Clock::now();
  SequenceOutputState s(t, options({}, false), 2, arrival);
  RequestEvent ev;
  ev.new_token_ids = {word_token(t, "a")};
  ev.new_logprobs = {
      TokenLogprobs{word_token(t, "a"), -0.5f, {{word_token(t, "a"), -0.5f}, {kTinyEos, -1.5f}}}};
  ev.num_output_tokens = 1;
  ev.num_prompt_tokens = 5;
  ev.num_cached_tokens = 4;
  ev.first_scheduled_time = arrival + std::chrono::milliseconds(1);
  auto p1 = s.process(ev, arrival + std::chrono::milliseconds(3));
  ASSERT_EQ(p1.output.logprobs.size(), 1u);
  EXPECT_EQ(p1.output.logprobs[0].token, word_token(t, "a"));
  EXPECT_FLOAT_EQ(p1.output.logprobs[0].logprob, -0.5f);
  ASSERT_EQ(p1.output.logprobs[0].top.size(), 2u);
  EXPECT_EQ(p1.output.logprobs[0].top[1].first, kTinyEos);
  EXPECT_EQ(p1.output.index, 2);
  EXPECT_EQ(p1.output.request_id, "r1");
  ev.new_logprobs.clear();
  ev.num_output_tokens = 2;
  auto p2 = s.process(ev, arrival + std::chrono::milliseconds(5));
  ev.num_output_tokens = 3;
  ev.finish_reason = FinishReason::kLength;
  auto p3 = s.process(ev, arrival + std::chrono::milliseconds(9));
  ASSERT_TRUE(p3.output.finished);
  EXPECT_EQ(p3.output.usage.prompt_tokens, 5);
  EXPECT_EQ(p3.output.usage.completion_tokens, 3);
  EXPECT_EQ(p3.output.usage.cached_tokens, 4);
  // Times are the explicit clock values above: queue 1 ms, first token 3 ms, end 9 ms,
  // tokens at 3, 5 and 9 ms -> mean gap 3 ms.
  EXPECT_NEAR(p3.output.timings.queue_seconds, 0.001, 1e-9);
  EXPECT_NEAR(p3.output.timings.ttft_seconds, 0.003, 1e-9);
  EXPECT_NEAR(p3.output.timings.e2e_seconds, 0.009, 1e-9);
  EXPECT_NEAR(p3.output.timings.mean_tpot_seconds, 0.003, 1e-9);
}

TEST_F(SequenceOutputStateTest, AbortAndErrorStreamNothing) {
  const auto& t = *tok_;
  SequenceOutputState s(t, options({"zzz"}, false), 0, Clock::now());
  auto outs = run(s, {word_token(t, "z")}, std::nullopt);
  EXPECT_EQ(outs[0].text_delta, "");  // held back
  RequestOutput a = s.finish_without_event(FinishReason::kAbort, Clock::now());
  EXPECT_TRUE(a.finished);
  EXPECT_EQ(a.finish_reason, pagoda::FinishReason::kAbort);
  EXPECT_EQ(a.text_delta, "");
  EXPECT_EQ(a.usage.completion_tokens, 1);

  SequenceOutputState e(t, options({}, false), 0, Clock::now());
  RequestEvent ev;
  ev.finish_reason = FinishReason::kError;
  auto p = e.process(ev, Clock::now(), "boom");
  EXPECT_EQ(p.output.finish_reason, pagoda::FinishReason::kError);
  EXPECT_EQ(p.output.error, "boom");
}

// Random token streams (words, byte tokens that may form broken UTF-8, control tokens) with stop
// strings cut from the reference text: the streamed text equals sanitize(decode(ids)) cut at the
// first stop string, and every delta is valid UTF-8.
TEST_F(SequenceOutputStateTest, RandomStreamsAgainstDecode) {
  const auto& t = *tok_;
  std::mt19937 rng(5);
  std::vector<TokenId> pool;
  for (const std::string& w : testing::tiny_words())
    pool.push_back(*t.find_token(w));
  for (const uint8_t b : {0xC3, 0xA9, 0xE4, 0xB8, 0x96, 0x80, 0x41})
    pool.push_back(byte_token(b));
  pool.push_back(kTinyBos);
  for (int iter = 0; iter < 500; ++iter) {
    std::vector<TokenId> ids;
    const int n = 1 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i)
      ids.push_back(pool[rng() % pool.size()]);
    // Reference: the non-incremental decoder (strip the first leading space as the detokenizer
    // does for a text that starts here), sanitised.
    std::string full = tokenizer::utf8::sanitize(t.decode(ids, false));
    std::vector<std::string> stops;
    if (full.size() >= 2 && rng() % 4 != 0) {
      const size_t a = rng() % (full.size() - 1);
      const size_t len = 1 + rng() % std::min<size_t>(5, full.size() - a);
      std::string s = full.substr(a, len);
      if (tokenizer::utf8::is_valid(s)) stops.push_back(s);
    }
    if (rng() % 2 == 0) stops.push_back("xyz");
    const bool include = rng() % 2 == 0;
    // Naive cut of the reference text.
    std::string want = full;
    for (size_t end = 1; end <= full.size(); ++end) {
      size_t best = 0;
      for (const std::string& s : stops) {
        if (s.size() <= end && full.compare(end - s.size(), s.size(), s) == 0)
          best = std::max(best, s.size());
      }
      if (best > 0) {
        want = full.substr(0, include ? end : end - best);
        break;
      }
    }
    SequenceOutputState s(t, options(stops, include), 0, Clock::now());
    auto outs = run(s, ids, FinishReason::kLength);
    EXPECT_EQ(text_of(outs), want) << "iteration " << iter;
    ASSERT_TRUE(outs.back().finished);
    if (HasFailure()) return;
  }
}

}  // namespace
}  // namespace pagoda::engine
