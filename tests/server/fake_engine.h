// FakeEngine: a pagoda::Engine with no model, for server tests that need exact control of a
// request's phase. Tokens are bytes (id = byte + 3; 1 = BOS, 2 = EOS). A worker thread ticks
// every `tick`: it admits waiting requests up to `max_running`, spends `prefill_ticks` ticks on
// each before its first token, then emits one token per sample per tick from `script` (cycled)
// until max_tokens (finish_reason length). KV "blocks" are held per running sequence
// (ceil(tokens / 16)) and freed on finish or abort, so stats().kv_cache_usage returns to 0 when
// nothing runs. Everything that happened (submitted and aborted ids) is recorded for asserts.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pagoda/engine.h"

namespace pagoda::testing {

struct FakeEngineOptions {
  int32_t max_running = 4;
  int32_t max_queue = 0;  // 0 = unbounded
  int32_t prefill_ticks = 0;
  std::chrono::milliseconds tick{2};
  std::string script = "The quick brown fox jumps over the lazy dog. ";
  int32_t context_length = 256;
  int64_t num_blocks = 1000;
  int64_t num_preemptions = 0;  // reported by stats()
  // Speculative decoding counters reported by stats(): drafts, draft tokens, accepted, per pos.
  int64_t spec_drafts = 0, spec_draft_tokens = 0, spec_accepted = 0;
  std::vector<int64_t> spec_accepted_per_pos;
  bool no_chat_template = false;        // apply_chat_template fails as the real engine's does
  std::string model_id = "fake-model";  // ModelInfo::id
  // Counts live FakeEngines (incremented on construction, decremented on destruction).
  std::shared_ptr<std::atomic<int>> live_engines;
  int32_t num_labels = 0;  // ModelInfo::num_labels (a cross-encoder's classifier outputs)
};

class FakeEngine final : public Engine {
 public:
  explicit FakeEngine(FakeEngineOptions o = {}) : o_(std::move(o)) {
    info_.id = o_.model_id;
    if (o_.live_engines) ++*o_.live_engines;
    info_.architecture = "fake";
    info_.context_length = o_.context_length;
    info_.vocab_size = 259;
    info_.chat_template = "fake";
    info_.bos_token = "<s>";
    info_.eos_token = "</s>";
    info_.num_labels = o_.num_labels;
    worker_ = std::thread([this] { loop(); });
  }
  ~FakeEngine() override {
    shutdown();
    if (o_.live_engines) --*o_.live_engines;
  }

  const ModelInfo& model_info() const override { return info_; }

  std::vector<int32_t> tokenize(const std::string& text, bool add_special, bool) const override {
    std::vector<int32_t> ids;
    if (add_special) ids.push_back(1);
    for (unsigned char c : text)
      ids.push_back(c + 3);
    return ids;
  }
  std::string detokenize(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (int32_t id : ids) {
      if (id >= 3 && id < 259) s += static_cast<char>(id - 3);
    }
    return s;
  }
  Result<std::string> apply_chat_template(const std::string& messages_json, const std::string&,
                                          bool add_generation_prompt) const override {
    if (o_.no_chat_template) return failed_precondition("the model has no chat template");
    if (messages_json.size() < 2) return invalid_argument("messages is not valid JSON");
    return messages_json + (add_generation_prompt ? "\nassistant:" : "");
  }

  Status add_request(GenerateRequest request, OutputCallback on_output) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!accepting_) return failed_precondition("not accepting");
    if (request.request_id.empty() || live_.count(request.request_id)) {
      return invalid_argument("request_id empty or live");
    }
    if (request.n < 1 || request.n > 8) return invalid_argument("n out of range");
    if (o_.max_queue > 0 && static_cast<int32_t>(waiting_.size()) >= o_.max_queue) {
      return resource_exhausted("the waiting queue is full");
    }
    Req r;
    r.req = std::move(request);
    r.cb = std::move(on_output);
    r.prefill_left = o_.prefill_ticks;
    r.samples.resize(static_cast<size_t>(r.req.n));
    r.arrival = std::chrono::steady_clock::now();
    submitted_.push_back(r.req.request_id);
    salts_.push_back(r.req.cache_salt);
    live_.insert(r.req.request_id);
    waiting_.push_back(std::move(r));
    cv_.notify_all();
    return Status();
  }

  void abort(const std::string& request_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    pending_aborts_.push_back(request_id);
    cv_.notify_all();
  }

  EngineStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    EngineStats s;
    int64_t used = 0;
    for (const Req& r : running_)
      used += blocks(r);
    s.num_running = static_cast<int32_t>(running_.size());
    s.num_waiting = static_cast<int32_t>(waiting_.size());
    s.num_blocks = o_.num_blocks;
    s.block_size = 16;
    s.num_used_blocks = used;
    s.kv_cache_usage = static_cast<double>(used) / static_cast<double>(o_.num_blocks);
    s.generation_tokens_total = generated_;
    s.num_preemptions = o_.num_preemptions;
    s.spec_decode_num_drafts = o_.spec_drafts;
    s.spec_decode_num_draft_tokens = o_.spec_draft_tokens;
    s.spec_decode_num_accepted_tokens = o_.spec_accepted;
    s.spec_decode_num_accepted_tokens_per_pos = o_.spec_accepted_per_pos;
    s.loop_alive = true;
    return s;
  }

  void stop_accepting() override {
    std::lock_guard<std::mutex> lock(mu_);
    accepting_ = false;
  }
  bool wait_idle(std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    return idle_cv_.wait_for(lock, timeout, [this] { return live_.empty(); });
  }
  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      accepting_ = false;
      for (const Req& r : running_)
        pending_aborts_.push_back(r.req.request_id);
      for (const Req& r : waiting_)
        pending_aborts_.push_back(r.req.request_id);
      stopping_ = true;
      cv_.notify_all();
    }
    if (worker_.joinable()) worker_.join();
  }

  // For assertions.
  std::vector<std::string> submitted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  // The cache_salt of each submitted request, in submission order.
  std::vector<std::string> salts() const {
    std::lock_guard<std::mutex> lock(mu_);
    return salts_;
  }
  std::set<std::string> aborted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return aborted_;
  }
  size_t num_live() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_.size();
  }

 private:
  struct Sample {
    int32_t generated = 0;
    bool finished = false;
  };
  struct Req {
    GenerateRequest req;
    OutputCallback cb;
    int32_t prefill_left = 0;
    std::vector<Sample> samples;
    std::chrono::steady_clock::time_point arrival;
    std::chrono::steady_clock::time_point first_token;
    bool started = false;
  };
  using Delivery = std::pair<OutputCallback, RequestOutput>;

  static int64_t blocks(const Req& r) {
    int64_t total = 0;
    for (const Sample& s : r.samples) {
      if (!s.finished)
        total += (static_cast<int64_t>(r.req.prompt_tokens.size()) + s.generated + 15) / 16;
    }
    return total;
  }

  static RequestOutput final_output(const Req& r, int32_t index, FinishReason reason) {
    RequestOutput out;
    out.request_id = r.req.request_id;
    out.index = index;
    out.finished = true;
    out.finish_reason = reason;
    out.usage.prompt_tokens = static_cast<int32_t>(r.req.prompt_tokens.size());
    out.usage.completion_tokens = r.samples[static_cast<size_t>(index)].generated;
    const auto now = std::chrono::steady_clock::now();
    out.timings.e2e_seconds = std::chrono::duration<double>(now - r.arrival).count();
    if (r.started) {
      out.timings.ttft_seconds = std::chrono::duration<double>(r.first_token - r.arrival).count();
    }
    return out;
  }

  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait_for(lock, o_.tick);
      std::vector<Delivery> out;
      // Aborts.
      for (const std::string& id : pending_aborts_) {
        const auto abort_in = [&](auto& list) {
          for (auto it = list.begin(); it != list.end(); ++it) {
            if (it->req.request_id != id) continue;
            for (size_t i = 0; i < it->samples.size(); ++i) {
              if (it->samples[i].finished) continue;
              RequestOutput o = final_output(*it, static_cast<int32_t>(i), FinishReason::kAbort);
              it->samples[i].finished = true;
              out.emplace_back(it->cb, std::move(o));
            }
            aborted_.insert(id);
            live_.erase(id);
            list.erase(it);
            return;
          }
        };
        abort_in(running_);
        abort_in(waiting_);
      }
      pending_aborts_.clear();
      // Admission.
      while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < o_.max_running) {
        running_.push_back(std::move(waiting_.front()));
        waiting_.pop_front();
      }
      // One step.
      for (auto it = running_.begin(); it != running_.end();) {
        Req& r = *it;
        if (r.prefill_left > 0) {
          --r.prefill_left;
          ++it;
          continue;
        }
        if (!r.started) {
          r.started = true;
          r.first_token = std::chrono::steady_clock::now();
        }
        bool all_done = true;
        for (size_t i = 0; i < r.samples.size(); ++i) {
          Sample& s = r.samples[i];
          if (s.finished) continue;
          const char c = o_.script[static_cast<size_t>(s.generated) % o_.script.size()];
          ++s.generated;
          ++generated_;
          RequestOutput o;
          o.request_id = r.req.request_id;
          o.index = static_cast<int32_t>(i);
          o.new_token_ids = {static_cast<unsigned char>(c) + 3};
          o.text_delta = std::string(1, c);
          if (r.req.sampling.logprobs >= 0) {
            TokenLogprobs lp;
            lp.token = o.new_token_ids[0];
            lp.logprob = -0.5f;
            for (int32_t k = 0; k < r.req.sampling.logprobs; ++k) {
              lp.top.emplace_back(3 + 'a' + k, -0.5f - static_cast<float>(k));
            }
            o.logprobs.push_back(lp);
          }
          if (s.generated >= r.req.stop.max_tokens) {
            RequestOutput f = final_output(r, static_cast<int32_t>(i), FinishReason::kLength);
            o.finished = true;
            o.finish_reason = FinishReason::kLength;
            o.usage = f.usage;
            o.timings = f.timings;
            s.finished = true;
          } else {
            all_done = false;
          }
          out.emplace_back(r.cb, std::move(o));
        }
        if (all_done) {
          live_.erase(r.req.request_id);
          it = running_.erase(it);
        } else {
          ++it;
        }
      }
      const bool stop =
          stopping_ && running_.empty() && waiting_.empty() && pending_aborts_.empty();
      lock.unlock();
      for (auto& [cb, o] : out)
        cb(std::move(o));
      lock.lock();
      if (live_.empty()) idle_cv_.notify_all();
      if (stop) return;
    }
  }

  FakeEngineOptions o_;
  ModelInfo info_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Req> waiting_;
  std::deque<Req> running_;
  std::vector<std::string> pending_aborts_;
  std::set<std::string> live_;
  std::vector<std::string> submitted_;
  std::vector<std::string> salts_;
  std::set<std::string> aborted_;
  int64_t generated_ = 0;
  bool accepting_ = true;
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace pagoda::testing
