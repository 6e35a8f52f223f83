// Test harness: a Scheduler + FakeModel, driving steps and collecting each sequence's outputs
// (keyed by the id of the request that was added and the sample index) from the events.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/step.h"
#include "fake_model.h"

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
      : scheduler_(std::move(Scheduler::create(config)).value()), model_(scheduler_) {}

  Scheduler& scheduler() { return scheduler_; }
  FakeModel& model() { return model_; }

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
    StepResult r = run_step(scheduler_, model_);
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
    return reference_outputs(prompts_.at(root), stops_.at(root), sample);
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
  Scheduler scheduler_;
  FakeModel model_;
  std::map<RequestId, RequestId> roots_;  // sequence id -> id of the request that was added
  std::map<RequestId, std::vector<TokenId>> prompts_;
  std::map<RequestId, StopParams> stops_;
  std::map<std::pair<RequestId, int32_t>, SequenceResult> results_;
};

}  // namespace pagoda::engine::testing
