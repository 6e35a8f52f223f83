// FakeExecutor: the one fake runner of the engine tests (the scheduler tests through the
// Harness, the EngineCore tests through the core), playing the runner's part honestly: it keeps
// a shadow KV store ([block][slot] = token and position written there), applies block copies,
// writes every scheduled token through its block table and samples from the context it reads
// back *from the store*, so a wrong block table, a bad prefix hit or a missed copy-on-write
// changes the output. It checks the StepPlan contract (step/step_plan.h) that needs only the
// plan; a caller with the scheduler at hand adds its own checks through on_plan.
// The next token is a hash of the whole context (reference_outputs() runs the same function on
// the true token sequence), mapped through a table of output ids (identity by default; the
// EngineCore tests map into a tiny tokenizer's vocabulary).
// With `window` > 0 (a sliding-window model) the next token depends only on the last `window`
// tokens and their positions, the executor reads only those back, and a block table may hold the
// null block only for blocks no query of the step reads.
// Test hooks: fail a given call, throw a non-std exception, delay, or block on a gate.
// Speculative decoding: with num_proposed_drafts > 0 it proposes drafts after every sample (the
// true continuation with some tokens deliberately wrong, so runs are accepted, cut short and
// rejected at once) and verifies drafted entries greedily against contexts read back from the
// store, where the drafts were written: KV kept for a rejected draft changes the output.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>
#include <span>
#include <thread>
#include <vector>

#include "engine/stop_params.h"
#include "step/executor.h"

namespace pagoda::engine::testing {

inline constexpr int32_t kVocab = 64;

// next token = f(context): depends on every context token and its position (window > 0: on the
// last `window` ones only).
inline TokenId next_token(std::span<const TokenId> context, int32_t window = 0) {
  uint64_t h = 1469598103934665603ull;
  const size_t first =
      window > 0 && context.size() > static_cast<size_t>(window) ? context.size() - window : 0;
  for (size_t p = first; p < context.size(); ++p) {
    h = (h ^ static_cast<uint64_t>(context[p] + 1)) * 1099511628211ull;
    h ^= p;
  }
  return static_cast<TokenId>((h >> 17) % kVocab);
}
// Sample i of a forking step is offset so the n samples differ.
inline TokenId sample_token(std::span<const TokenId> context, int32_t i, int32_t window = 0) {
  return static_cast<TokenId>((next_token(context, window) + i) % kVocab);
}

// The reference generation of sample `index` of a request (identity table), stopping the way
// the scheduler is specified to (EOS / stop ids once min_tokens are out, then max_tokens).
inline std::vector<TokenId> reference_outputs(const std::vector<TokenId>& prompt,
                                              const StopParams& stop, int32_t index,
                                              int32_t window = 0) {
  std::vector<TokenId> seq = prompt;
  std::vector<TokenId> out;
  while (true) {
    const TokenId t = out.empty() ? sample_token(seq, index, window) : next_token(seq, window);
    seq.push_back(t);
    out.push_back(t);
    const int n = static_cast<int>(out.size());
    bool stopped = false;
    if (n >= stop.min_tokens) {
      for (TokenId e : stop.eos_token_ids)
        stopped |= !stop.ignore_eos && e == t;
      for (TokenId e : stop.stop_token_ids)
        stopped |= e == t;
    }
    if (stopped || n >= stop.max_tokens) return out;
  }
}

inline std::vector<TokenId> identity_table() {
  std::vector<TokenId> t(kVocab);
  std::iota(t.begin(), t.end(), 0);
  return t;
}

class FakeExecutor : public step::Executor {
 public:
  // `table`: kVocab output ids, the i-th hash value's token.
  FakeExecutor(int32_t num_blocks, int32_t block_size,
               std::vector<TokenId> table = identity_table())
      : bs_(block_size),
        table_(std::move(table)),
        tokens_(static_cast<size_t>(num_blocks) * block_size, -1),
        positions_(tokens_.size(), -1) {}

  std::atomic<int64_t> fail_call{-1};   // this call (1-based) returns an error
  std::atomic<int64_t> throw_call{-1};  // this call throws a non-std exception
  std::atomic<int64_t> delay_us{0};
  int32_t num_proposed_drafts = 0;  // drafts proposed per sample (0: none)
  int32_t window = 0;               // the model's sliding window on every layer (0: none)
  // A hybrid model (KV groups {full, group_window}: plan entries bring sliding_block_table): its
  // local layers' K/V are written through that table too, and every query reads its window back
  // through it (it must hold the same tokens as the full layers' table); 0: no such layers.
  int32_t group_window = 0;
  // Called with every plan before it runs (the Harness checks it against the scheduler).
  std::function<void(const step::StepPlan&)> on_plan;

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

  Result<step::StepOutput> execute(const step::StepPlan& plan) override {
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
    check_plan(plan);
    if (on_plan) on_plan(plan);
    for (const kv::BlockCopy& c : plan.block_copies) {
      for (int32_t j = 0; j < bs_; ++j) {
        tokens_[c.dst * bs_ + j] = tokens_[c.src * bs_ + j];
        positions_[c.dst * bs_ + j] = positions_[c.src * bs_ + j];
      }
    }
    // Write all tokens of the batch, then read (like a per-layer KV write before attention).
    std::set<int64_t> written;
    for (const step::ScheduledRequest& s : plan.requests) {
      for (size_t i = 0; i < s.token_ids.size(); ++i) {
        const int64_t p = s.num_computed_tokens + static_cast<int64_t>(i);
        const kv::BlockId b = s.block_table[static_cast<size_t>(p / bs_)];
        EXPECT_TRUE(written.insert(int64_t{b} * bs_ + p % bs_).second)
            << "request " << s.id << " writes a slot of block " << b << " written in this step";
        tokens_[b * bs_ + p % bs_] = s.token_ids[i];
        positions_[b * bs_ + p % bs_] = p;
        if (group_window == 0) continue;
        // The local layers' copy (a block id belongs to one group at a time).
        const kv::BlockId g = s.sliding_block_table[static_cast<size_t>(p / bs_)];
        EXPECT_TRUE(written.insert(int64_t{g} * bs_ + p % bs_).second)
            << "request " << s.id << " writes a slot of local block " << g << " twice in a step";
        tokens_[g * bs_ + p % bs_] = s.token_ids[i];
        positions_[g * bs_ + p % bs_] = p;
      }
    }
    step::StepOutput out;
    for (const step::ScheduledRequest& s : plan.requests) {
      if (s.num_samples == 0) continue;
      const int64_t end = s.num_computed_tokens + static_cast<int64_t>(s.token_ids.size());
      // The window of the step's first query on: every row below reads inside it.
      std::vector<TokenId> context(static_cast<size_t>(end), -1);
      for (int64_t p = first_read(s.num_computed_tokens); p < end; ++p) {
        const size_t slot = s.block_table[static_cast<size_t>(p / bs_)] * bs_ + p % bs_;
        EXPECT_EQ(positions_[slot], p) << "request " << s.id << " reads a stale slot";
        context[static_cast<size_t>(p)] = tokens_[slot];
      }
      // The local layers read the window of the step's first query through their own table.
      for (int64_t p = group_window == 0 ? end : first_read(s.num_computed_tokens, group_window);
           p < end; ++p) {
        const size_t slot = s.sliding_block_table[static_cast<size_t>(p / bs_)] * bs_ + p % bs_;
        EXPECT_EQ(positions_[slot], p) << "request " << s.id << " reads a stale local slot";
        EXPECT_EQ(tokens_[slot], context[static_cast<size_t>(p)])
            << "request " << s.id << " local and global layers disagree at " << p;
      }
      step::SampledTokens st;
      st.id = s.id;
      if (s.num_draft_tokens > 0) {
        EXPECT_EQ(s.num_samples, 1);
        EXPECT_LT(s.num_draft_tokens, static_cast<int32_t>(s.token_ids.size()));
        // context now ends with the drafts: row i is the context before draft i.
        const size_t known = context.size() - static_cast<size_t>(s.num_draft_tokens);
        for (size_t i = 0; i <= static_cast<size_t>(s.num_draft_tokens); ++i) {
          const TokenId t = table_[static_cast<size_t>(
              next_token(std::span<const TokenId>(context).first(known + i), window))];
          st.token_ids.push_back(t);
          if (s.sampling->logprobs >= 0) st.logprobs.push_back(TokenLogprobs{t, -1.0f, {}});
          if (i == static_cast<size_t>(s.num_draft_tokens) || t != context[known + i]) break;
        }
        context.resize(known);
        context.insert(context.end(), st.token_ids.begin(), st.token_ids.end());
        propose(context, st.draft_token_ids);
        out.sampled.push_back(std::move(st));
        continue;
      }
      for (int32_t i = 0; i < s.num_samples; ++i) {
        const TokenId t =
            table_[static_cast<size_t>(sample_token(context, s.sample_index > 0 ? 0 : i, window))];
        st.token_ids.push_back(t);
        if (s.sampling->logprobs >= 0) st.logprobs.push_back(TokenLogprobs{t, -1.0f * (i + 1), {}});
      }
      if (s.num_samples == 1) {
        context.push_back(st.token_ids[0]);
        propose(context, st.draft_token_ids);
      }
      out.sampled.push_back(std::move(st));
    }
    return out;
  }

 private:
  // Up to num_proposed_drafts tokens after `context`: its true continuation (identity table)
  // with a token replaced when a hash of the position says so (about one in four).
  void propose(std::vector<TokenId> context, std::vector<TokenId>& drafts) const {
    drafts.clear();
    if (num_proposed_drafts == 0) return;
    const size_t len = context.size();
    const int32_t k =
        1 + static_cast<int32_t>((len * 7) % static_cast<size_t>(num_proposed_drafts));
    for (int32_t i = 0; i < k; ++i) {
      TokenId t = table_[static_cast<size_t>(next_token(context, window))];
      if ((len * 31 + static_cast<size_t>(i) * 17) % 4 == 0) t = (t + 1) % kVocab;
      drafts.push_back(t);
      context.push_back(t);
    }
  }

  // The first position a query at `pos` reads through window `w`.
  static int64_t first_read(int64_t pos, int32_t w) {
    return w > 0 ? std::max<int64_t>(0, pos - w + 1) : 0;
  }
  int64_t first_read(int64_t pos) const { return first_read(pos, window); }

  // The StepPlan invariants that need only the plan.
  void check_plan(const step::StepPlan& plan) const {
    EXPECT_EQ(plan.block_size, bs_);
    int64_t sum = 0;
    std::set<RequestId> ids;
    for (const step::ScheduledRequest& s : plan.requests) {
      EXPECT_TRUE(ids.insert(s.id).second) << "request " << s.id << " twice in a plan";
      EXPECT_FALSE(s.token_ids.empty());
      EXPECT_NE(s.sampling, nullptr);
      sum += static_cast<int64_t>(s.token_ids.size());
      const int64_t end = s.num_computed_tokens + static_cast<int64_t>(s.token_ids.size());
      EXPECT_GE(static_cast<int64_t>(s.block_table.size()) * bs_, end);
      // Only blocks wholly before the first query's window may be the null block.
      for (size_t i = static_cast<size_t>(first_read(s.num_computed_tokens) / bs_);
           i < s.block_table.size(); ++i) {
        EXPECT_NE(s.block_table[i], kv::kNullBlockId)
            << "request " << s.id << " entry " << i << " at " << s.num_computed_tokens;
      }
      if (group_window > 0) {
        EXPECT_EQ(s.sliding_block_table.size(), s.block_table.size()) << "request " << s.id;
        for (size_t i = 0; i < s.sliding_block_table.size(); ++i) {
          const bool in_window =
              static_cast<int64_t>(i) >= first_read(s.num_computed_tokens, group_window) / bs_;
          if (in_window) {
            EXPECT_NE(s.sliding_block_table[i], kv::kNullBlockId)
                << "request " << s.id << " local entry " << i << " at " << s.num_computed_tokens;
          }
        }
      } else {
        EXPECT_TRUE(s.sliding_block_table.empty());
      }
      if (s.is_new) {
        EXPECT_GE(static_cast<int64_t>(s.history_token_ids.size()), end);
      }
    }
    EXPECT_EQ(sum, plan.num_scheduled_tokens);
  }

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
