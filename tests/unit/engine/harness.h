// Test harness: a Scheduler + the FakeExecutor, driving steps through run_step (the engine's
// one step loop body) and collecting each sequence's outputs
// (keyed by the id of the request that was added and the sample index) from the events.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/step_loop.h"
#include "fake_executor.h"

namespace pagoda::engine::testing {

inline SchedulerConfig small_config(int32_t num_blocks, int32_t block_size, int32_t budget,
                                    int32_t max_seqs) {
  SchedulerConfig c;
  c.max_num_seqs = max_seqs;
  c.max_num_batched_tokens = budget;
  c.kv.num_blocks = num_blocks;
  c.kv.block_size = block_size;
  return c;
}

inline std::vector<TokenId> make_prompt(int n, uint32_t seed) {
  std::vector<TokenId> t;
  uint32_t x = seed * 2654435761u + 12345u;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    t.push_back(static_cast<TokenId>((x >> 8) % kVocab));
  }
  return t;
}

struct SequenceResult {
  std::vector<TokenId> outputs;
  std::optional<FinishReason> finish;
  std::optional<TokenId> stop_token;
};

class Harness {
 public:
  explicit Harness(const SchedulerConfig& config)
      : scheduler_(std::move(Scheduler::create(config)).value()),
        executor_(config.kv.num_blocks, config.kv.block_size) {
    executor_.window = config.kv.sliding_window;
    if (config.kv.group_windows.size() == 2) executor_.group_window = config.kv.group_windows[1];
    executor_.on_plan = [this](const step::StepPlan& plan) {
      check_plan(plan);
      if (during_step) during_step(plan);
    };
  }

  // Called with every plan while it is in flight (inside the executor, before settling).
  std::function<void(const step::StepPlan&)> during_step;

  Scheduler& scheduler() { return scheduler_; }
  FakeExecutor& executor() { return executor_; }

  RequestId add(std::vector<TokenId> prompt, int32_t max_tokens, int32_t n = 1,
                int32_t priority = 0, StopParams stop = {}, std::string salt = "") {
    NewRequest r;
    r.prompt_token_ids = std::move(prompt);
    r.n = n;
    r.priority = priority;
    stop.max_tokens = max_tokens;
    r.stop = std::move(stop);
    r.cache_salt = std::move(salt);
    return add_request(std::move(r));
  }
  RequestId add_request(NewRequest r) {
    const std::vector<TokenId> prompt = r.prompt_token_ids;
    const StopParams stop = r.stop;
    auto id = scheduler_.add_request(std::move(r));
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    if (!id.ok()) return 0;
    roots_[*id] = *id;
    prompts_[*id] = prompt;
    stops_[*id] = stop;
    return *id;
  }

  // One step; records events; checks invariants.
  StepResult step() {
    StepResult r = run_step(scheduler_, executor_);
    EXPECT_TRUE(r.status.ok()) << r.status.to_string();
    record(r.events);
    const Status st = scheduler_.check_invariants();
    EXPECT_TRUE(st.ok()) << st.to_string();
    return r;
  }

  void record(const std::vector<RequestEvent>& events) {
    for (const RequestEvent& ev : events) {
      if (ev.parent_id) roots_[ev.id] = roots_.at(*ev.parent_id);
      SequenceResult& s = results_[{roots_.at(ev.id), ev.sample_index}];
      s.outputs.insert(s.outputs.end(), ev.new_token_ids.begin(), ev.new_token_ids.end());
      EXPECT_EQ(static_cast<int64_t>(s.outputs.size()), ev.num_output_tokens);
      if (ev.finish_reason) {
        EXPECT_FALSE(s.finish.has_value()) << "request " << ev.id << " finished twice";
        s.finish = ev.finish_reason;
        s.stop_token = ev.stop_token_id;
      }
    }
  }

  // Steps until nothing is left (bounded).
  void run_to_completion(int max_steps = 100000) {
    for (int i = 0; i < max_steps && scheduler_.has_unfinished_requests(); ++i)
      step();
    EXPECT_FALSE(scheduler_.has_unfinished_requests());
  }

  const SequenceResult& result(RequestId root, int32_t sample = 0) {
    return results_[{root, sample}];
  }
  std::vector<TokenId> expected(RequestId root, int32_t sample = 0) const {
    return reference_outputs(prompts_.at(root), stops_.at(root), sample,
                             scheduler_.config().kv.sliding_window);
  }
  // Every finished, non-aborted sequence produced exactly the reference outputs.
  void expect_reference_outputs() {
    for (const auto& [key, res] : results_) {
      if (!res.finish || *res.finish == FinishReason::kAbort) continue;
      EXPECT_EQ(res.outputs, expected(key.first, key.second))
          << "request " << key.first << " sample " << key.second;
    }
  }
  void expect_pool_idle() {
    const kv::BlockPool& pool = scheduler_.kv().pool();
    EXPECT_EQ(pool.num_free_blocks(), pool.num_usable_blocks());
    for (kv::BlockId b = 0; b < pool.num_blocks(); ++b)
      EXPECT_EQ(pool.ref_count(b), 0);
    EXPECT_EQ(scheduler_.kv().num_sequences(), 0u);
    EXPECT_TRUE(scheduler_.check_invariants().ok());
  }

 private:
  // The plan contract against the scheduler's config and block pool: budgets, and a block shared
  // with another sequence is written only as a published prefix block that requests admitted in
  // the same step read (never write).
  void check_plan(const step::StepPlan& plan) const {
    const SchedulerConfig& cfg = scheduler_.config();
    EXPECT_LE(plan.num_scheduled_tokens, cfg.max_num_batched_tokens);
    EXPECT_LE(static_cast<int32_t>(plan.requests.size()), cfg.max_num_seqs);
    const kv::BlockPool& pool = scheduler_.kv().pool();
    const int64_t bs = plan.block_size;
    for (const step::ScheduledRequest& s : plan.requests) {
      for (size_t i = 0; i < s.token_ids.size(); ++i) {
        const int64_t p = s.num_computed_tokens + static_cast<int64_t>(i);
        const kv::BlockId b = s.block_table[static_cast<size_t>(p / bs)];
        if (pool.ref_count(b) != 1) {
          EXPECT_TRUE(pool.block_hash(b).has_value())
              << "request " << s.id << " writes position " << p << " into shared block " << b;
        }
      }
    }
  }

  Scheduler scheduler_;
  FakeExecutor executor_;
  std::map<RequestId, RequestId> roots_;  // sequence id -> id of the request that was added
  std::map<RequestId, std::vector<TokenId>> prompts_;
  std::map<RequestId, StopParams> stops_;
  std::map<std::pair<RequestId, int32_t>, SequenceResult> results_;
};

}  // namespace pagoda::engine::testing
