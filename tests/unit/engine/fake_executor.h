// FakeExecutor: a ModelExecutor for EngineCore tests that needs no Scheduler reference (the
// core owns its scheduler). Like FakeModel it keeps a shadow KV store, applies block copies,
// writes every scheduled token through its block table and samples from the context read back
// *from the store*, so bad tables, prefix hits or copies change the output. Tokens come from a
// table of tiny-vocab ids (words, byte tokens that split UTF-8 characters, EOS).
// Test hooks: fail a given call, throw a non-std exception, delay, or block on a gate.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/model_executor.h"
#include "fake_model.h"
#include "tiny_tokenizer.h"

namespace pagoda::engine::testing {

// 64 output ids: every word piece, a few byte tokens, EOS once.
inline const std::vector<TokenId>& fake_output_table(const tokenizer::Tokenizer& t) {
  static const std::vector<TokenId> table = [&t] {
    std::vector<TokenId> v;
    for (const std::string& w : tiny_words())
      v.push_back(*t.find_token(w));
    for (const uint8_t b : {0xC3, 0xA9, 0xE4, 0xB8, 0x96})
      v.push_back(byte_token(b));
    v.push_back(kTinyEos);
    for (int i = 0; static_cast<int>(v.size()) < kVocab; ++i)
      v.push_back(*t.find_token(tiny_words()[static_cast<size_t>(i) % tiny_words().size()]));
    return v;
  }();
  return table;
}

inline TokenId fake_token(const std::vector<TokenId>& table, std::span<const TokenId> context,
                          int32_t offset) {
  return table[static_cast<size_t>(sample_token(context, offset))];
}

// What sample `index` of a request generates (EOS stops unless ignore_eos).
inline std::vector<TokenId> fake_reference(const std::vector<TokenId>& table,
                                           const std::vector<TokenId>& prompt, int32_t max_tokens,
                                           int32_t index, bool ignore_eos = false) {
  std::vector<TokenId> seq = prompt;
  std::vector<TokenId> out;
  while (static_cast<int32_t>(out.size()) < max_tokens) {
    const TokenId t = fake_token(table, seq, out.empty() ? index : 0);
    seq.push_back(t);
    out.push_back(t);
    if (t == kTinyEos && !ignore_eos) break;
  }
  return out;
}

class FakeExecutor : public ModelExecutor {
 public:
  FakeExecutor(int32_t num_blocks, int32_t block_size, std::vector<TokenId> table)
      : bs_(block_size),
        table_(std::move(table)),
        tokens_(static_cast<size_t>(num_blocks) * block_size, -1),
        positions_(tokens_.size(), -1) {}

  std::atomic<int64_t> fail_call{-1};   // this call (1-based) returns an error
  std::atomic<int64_t> throw_call{-1};  // this call throws a non-std exception
  std::atomic<int64_t> delay_us{0};

  // Gate: while closed, execute() blocks (after announcing it entered).
  void close_gate() {
    std::lock_guard<std::mutex> l(mu_);
    gate_open_ = false;
  }
  void open_gate() {
    {
      std::lock_guard<std::mutex> l(mu_);
      gate_open_ = true;
    }
    cv_.notify_all();
  }
  // Waits until execute() has been entered at least `n` times.
  void wait_entered(int64_t n) {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return entered_ >= n; });
  }
  int64_t num_calls() const { return calls_.load(); }

  Result<StepOutput> execute(const StepPlan& plan) override {
    const int64_t call = ++calls_;
    {
      std::unique_lock<std::mutex> l(mu_);
      ++entered_;
      cv_.notify_all();
      cv_.wait(l, [&] { return gate_open_; });
    }
    if (delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us.load()));
    if (call == throw_call) throw 42;  // NOLINT: deliberately not a std::exception
    if (call == fail_call) return internal_error("injected executor failure at call {}", call);
    for (const kv::BlockCopy& c : plan.block_copies) {
      for (int32_t j = 0; j < bs_; ++j) {
        tokens_[c.dst * bs_ + j] = tokens_[c.src * bs_ + j];
        positions_[c.dst * bs_ + j] = positions_[c.src * bs_ + j];
      }
    }
    for (const ScheduledRequest& s : plan.requests) {
      for (size_t i = 0; i < s.token_ids.size(); ++i) {
        const int64_t p = s.num_computed_tokens + static_cast<int64_t>(i);
        const kv::BlockId b = s.block_table[static_cast<size_t>(p / bs_)];
        tokens_[b * bs_ + p % bs_] = s.token_ids[i];
        positions_[b * bs_ + p % bs_] = p;
      }
    }
    StepOutput out;
    for (const ScheduledRequest& s : plan.requests) {
      if (s.num_samples == 0) continue;
      const int64_t end = s.num_computed_tokens + static_cast<int64_t>(s.token_ids.size());
      std::vector<TokenId> context;
      for (int64_t p = 0; p < end; ++p) {
        const size_t slot = s.block_table[static_cast<size_t>(p / bs_)] * bs_ + p % bs_;
        EXPECT_EQ(positions_[slot], p) << "request " << s.id << " reads a stale slot";
        context.push_back(tokens_[slot]);
      }
      SampledTokens st;
      st.id = s.id;
      for (int32_t i = 0; i < s.num_samples; ++i) {
        st.token_ids.push_back(fake_token(table_, context, s.sample_index > 0 ? 0 : i));
        if (s.sampling->logprobs >= 0) st.logprobs.push_back(SampleLogprobs{-1.0f * (i + 1), {}});
      }
      out.sampled.push_back(std::move(st));
    }
    return out;
  }

 private:
  int32_t bs_;
  std::vector<TokenId> table_;
  std::vector<TokenId> tokens_;
  std::vector<int64_t> positions_;
  std::atomic<int64_t> calls_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool gate_open_ = true;
  int64_t entered_ = 0;
};

}  // namespace pagoda::engine::testing
