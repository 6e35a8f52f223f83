// A deterministic fake "model" for scheduler tests, playing the runner's part honestly: it
// keeps a shadow KV store ([block][slot] = token and position written there), applies block
// copies, writes every scheduled token through the block table, and samples from the context
// it reads back *from the KV store* — so a wrong block table, a bad prefix hit or a missed
// copy-on-write changes the output. The expected outputs come from reference_outputs(), which
// runs the same next-token function directly on the true token sequence.
#pragma once

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "engine/model_executor.h"
#include "engine/scheduler.h"

namespace pagoda::engine::testing {

inline constexpr int32_t kVocab = 64;

// next token = f(context): depends on every context token and its position.
inline TokenId next_token(std::span<const TokenId> context) {
  uint64_t h = 1469598103934665603ull;
  for (size_t p = 0; p < context.size(); ++p) {
    h = (h ^ static_cast<uint64_t>(context[p] + 1)) * 1099511628211ull;
    h ^= p;
  }
  return static_cast<TokenId>((h >> 17) % kVocab);
}
// Sample i of a forking step is offset so the n samples differ.
inline TokenId sample_token(std::span<const TokenId> context, int32_t i) {
  return static_cast<TokenId>((next_token(context) + i) % kVocab);
}

// The reference generation of sample `index` of a request, stopping the way the scheduler is
// specified to (EOS / stop ids once min_tokens are out, then max_tokens).
inline std::vector<TokenId> reference_outputs(const std::vector<TokenId>& prompt,
                                              const StopParams& stop, int32_t index) {
  std::vector<TokenId> seq = prompt;
  std::vector<TokenId> out;
  while (true) {
    const TokenId t = out.empty() ? sample_token(seq, index) : next_token(seq);
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

class FakeModel : public ModelExecutor {
 public:
  explicit FakeModel(const Scheduler& scheduler)
      : scheduler_(scheduler),
        bs_(scheduler.config().kv.block_size),
        tokens_(static_cast<size_t>(scheduler.config().kv.num_blocks) * bs_, -1),
        positions_(tokens_.size(), -1) {}

  Result<StepOutput> execute(const StepPlan& plan) override {
    ++num_calls_;
    check_plan(plan);
    for (const kv::BlockCopy& c : plan.block_copies) {
      for (int32_t j = 0; j < bs_; ++j) {
        tokens_[c.dst * bs_ + j] = tokens_[c.src * bs_ + j];
        positions_[c.dst * bs_ + j] = positions_[c.src * bs_ + j];
      }
    }
    // Write all tokens of the batch, then read (like a per-layer KV write before attention).
    // A block written in this step may already be shared only as a published prefix block
    // that requests admitted in the same step read (never write).
    std::set<int64_t> written;
    for (const ScheduledRequest& s : plan.requests) {
      for (size_t i = 0; i < s.token_ids.size(); ++i) {
        const int64_t p = s.num_computed_tokens + static_cast<int64_t>(i);
        const kv::BlockId b = s.block_table[p / bs_];
        EXPECT_TRUE(written.insert(int64_t{b} * bs_ + p % bs_).second)
            << "request " << s.id << " writes a slot of block " << b << " written in this step";
        if (scheduler_.kv().pool().ref_count(b) != 1) {
          EXPECT_TRUE(scheduler_.kv().pool().block_hash(b).has_value())
              << "request " << s.id << " writes position " << p << " into shared block " << b;
        }
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
        const size_t slot = s.block_table[p / bs_] * bs_ + p % bs_;
        EXPECT_EQ(positions_[slot], p) << "request " << s.id << " reads a stale slot";
        context.push_back(tokens_[slot]);
      }
      SampledTokens st;
      st.id = s.id;
      for (int32_t i = 0; i < s.num_samples; ++i) {
        st.token_ids.push_back(sample_token(context, s.sample_index > 0 ? 0 : i));
      }
      out.sampled.push_back(std::move(st));
    }
    return out;
  }

  int64_t num_calls() const { return num_calls_; }

 private:
  void check_plan(const StepPlan& plan) {
    const SchedulerConfig& cfg = scheduler_.config();
    EXPECT_LE(plan.num_scheduled_tokens, cfg.max_num_batched_tokens);
    EXPECT_LE(static_cast<int32_t>(plan.requests.size()), cfg.max_num_seqs);
    EXPECT_EQ(plan.block_size, bs_);
    int64_t sum = 0;
    std::set<RequestId> ids;
    for (const ScheduledRequest& s : plan.requests) {
      EXPECT_TRUE(ids.insert(s.id).second) << "request " << s.id << " twice in a plan";
      EXPECT_FALSE(s.token_ids.empty());
      EXPECT_NE(s.sampling, nullptr);
      sum += static_cast<int64_t>(s.token_ids.size());
      const int64_t end = s.num_computed_tokens + static_cast<int64_t>(s.token_ids.size());
      EXPECT_GE(static_cast<int64_t>(s.block_table.size()) * bs_, end);
      for (const kv::BlockId b : s.block_table)
        EXPECT_NE(b, kv::kNullBlockId);
      if (s.is_new) {
        EXPECT_GE(static_cast<int64_t>(s.history_token_ids.size()), end);
      }
    }
    EXPECT_EQ(sum, plan.num_scheduled_tokens);
  }

  const Scheduler& scheduler_;
  int32_t bs_;
  std::vector<TokenId> tokens_;
  std::vector<int64_t> positions_;
  int64_t num_calls_ = 0;
};

}  // namespace pagoda::engine::testing
