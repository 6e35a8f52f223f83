#include "server/server_metrics.h"

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "server/openai_response.h"

namespace pagoda::server {

namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;

// vLLM's buckets (vllm/v1/metrics/loggers.py).
const Histogram::BucketBoundaries kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const Histogram::BucketBoundaries kTokenLatencyBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                          0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                          7.5,  10.0,  20.0, 40.0,  80.0};
const Histogram::BucketBoundaries kRequestLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

const char* rejection_name(Rejection r) {
  switch (r) {
    case Rejection::kQueueFull:
      return "queue_full";
    case Rejection::kQueueTimeout:
      return "queue_timeout";
    case Rejection::kLoading:
      return "loading";
    case Rejection::kDraining:
      return "draining";
    case Rejection::kConnections:
      return "too_many_connections";
    case Rejection::kInvalid:
      return "invalid_request";
    case Rejection::kUnauthorized:
      return "unauthorized";
    case Rejection::kModelsBusy:
      return "models_busy";
  }
  return "unknown";
}

const char* abort_name(AbortCause c) {
  switch (c) {
    case AbortCause::kClientDisconnect:
      return "client_disconnect";
    case AbortCause::kSlowReader:
      return "slow_reader";
    case AbortCause::kShutdown:
      return "shutdown";
  }
  return "unknown";
}

// VmRSS of /proc/self/status in bytes; -1 when unreadable.
double resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      try {
        return std::stod(line.substr(6)) * 1024.0;  // "VmRSS:   12345 kB"
      } catch (...) {
        return -1;
      }
    }
  }
  return -1;
}

}  // namespace

struct ServerMetrics::Impl {
  // The series of one served model (labels model_name = it, engine = "0").
  struct ModelSeries {
    Labels base;
    Gauge* running = nullptr;
    Gauge* waiting = nullptr;
    Gauge* kv_usage = nullptr;
    Gauge* ready = nullptr;
    Gauge* loaded = nullptr;
    Counter* prompt_tokens = nullptr;
    Counter* generation_tokens = nullptr;
    Counter* preemptions = nullptr;
    Counter* preemptions_kv_full = nullptr;  // pagoda:preemptions_total{reason="kv_cache_full"}
    Counter* prefix_queries = nullptr;
    Counter* prefix_hits = nullptr;
    Counter* spec_drafts = nullptr;
    Counter* spec_draft_tokens = nullptr;
    Counter* spec_accepted = nullptr;
    std::vector<Counter*> spec_per_pos;  // guarded by mu; grows with the positions seen
    std::map<FinishReason, Counter*> success;
    Histogram* ttft = nullptr;
    Histogram* itl = nullptr;
    Histogram* e2e = nullptr;
    Histogram* queue = nullptr;
    EngineStats last{};  // the previous scrape's counters (of engine last_identity)
    const void* last_identity = nullptr;

    Labels with(const std::string& key, const std::string& value) const {
      Labels l = base;
      l[key] = value;
      return l;
    }
  };

  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Labels base;  // the server-wide series' labels (the first model)
  std::map<std::string, std::unique_ptr<ModelSeries>> models;  // fixed after construction
  ModelSeries* first = nullptr;
  prometheus::Family<Counter>* spec_per_pos_family = nullptr;

  std::map<Rejection, Counter*> rejected;
  std::map<AbortCause, Counter*> aborted;
  prometheus::Family<Counter>* http_family = nullptr;
  std::map<int, Counter*> http;  // guarded by mu
  Gauge* connections = nullptr;
  Gauge* rss = nullptr;

  std::mutex mu;  // http map, scrape deltas, serialization

  Labels with(const std::string& key, const std::string& value) const {
    Labels l = base;
    l[key] = value;
    return l;
  }
  ModelSeries& series(const std::string& model) {
    auto it = models.find(model);
    return it == models.end() ? *first : *it->second;
  }
};

ServerMetrics::ServerMetrics(const std::vector<std::string>& model_names)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  prometheus::Registry& r = *m.registry;
  m.base = {{"model_name", model_names.front()}, {"engine", "0"}};
  const auto gauge_family = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r);
  };
  const auto counter_family = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(r);
  };
  const auto histogram_family = [&](const char* name, const char* help) {
    return &prometheus::BuildHistogram().Name(name).Help(help).Register(r);
  };
  auto* running =
      gauge_family("vllm:num_requests_running", "Number of requests in model execution batches.");
  auto* waiting =
      gauge_family("vllm:num_requests_waiting", "Number of requests waiting to be processed.");
  auto* kv_usage =
      gauge_family("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.");
  auto* prompt_tokens =
      counter_family("vllm:prompt_tokens_total", "Number of prefill tokens processed.");
  auto* generation_tokens =
      counter_family("vllm:generation_tokens_total", "Number of generation tokens processed.");
  auto* preemptions = counter_family("vllm:num_preemptions_total",
                                     "Cumulative number of preemption from the engine.");
  // The engine preempts only when the KV cache has no block for a running request (the victim
  // is recomputed later); the reason label leaves room for others.
  auto* preemptions_by_reason =
      counter_family("pagoda:preemptions_total", "Preemptions, by reason.");
  auto* prefix_queries =
      counter_family("vllm:prefix_cache_queries_total",
                     "Prefix cache queries, in terms of number of queried tokens.");
  auto* prefix_hits = counter_family("vllm:prefix_cache_hits_total",
                                     "Prefix cache hits, in terms of number of cached tokens.");
  // Speculative decoding, with vLLM's names (vllm/v1/spec_decode/metrics.py).
  auto* spec_drafts =
      counter_family("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.");
  auto* spec_draft_tokens =
      counter_family("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.");
  auto* spec_accepted =
      counter_family("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.");
  m.spec_per_pos_family = counter_family("vllm:spec_decode_num_accepted_tokens_per_pos",
                                         "Accepted tokens per draft position.");
  auto* success =
      counter_family("vllm:request_success_total", "Count of successfully processed requests.");
  auto* ttft = histogram_family("vllm:time_to_first_token_seconds",
                                "Histogram of time to first token in seconds.");
  auto* itl = histogram_family("vllm:inter_token_latency_seconds",
                               "Histogram of inter-token latency in seconds.");
  auto* e2e = histogram_family("vllm:e2e_request_latency_seconds",
                               "Histogram of e2e request latency in seconds.");
  auto* queue = histogram_family("vllm:request_queue_time_seconds",
                                 "Histogram of time spent in WAITING phase for request.");
  auto* ready =
      gauge_family("pagoda:engine_ready",
                   "1 when the model can serve: loaded with its engine loop alive, or unloaded and "
                   "loadable on demand (its last load did not fail).");
  auto* loaded = gauge_family("pagoda:model_loaded",
                              "1 when the model is loaded, 0 when unloaded or loading.");
  for (const std::string& name : model_names) {
    if (m.models.count(name) != 0) continue;
    auto ms = std::make_unique<Impl::ModelSeries>();
    Impl::ModelSeries& x = *ms;
    x.base = {{"model_name", name}, {"engine", "0"}};
    x.running = &running->Add(x.base);
    x.waiting = &waiting->Add(x.base);
    x.kv_usage = &kv_usage->Add(x.base);
    x.ready = &ready->Add(x.base);
    x.loaded = &loaded->Add(x.base);
    x.prompt_tokens = &prompt_tokens->Add(x.base);
    x.generation_tokens = &generation_tokens->Add(x.base);
    x.preemptions = &preemptions->Add(x.base);
    x.preemptions_kv_full = &preemptions_by_reason->Add(x.with("reason", "kv_cache_full"));
    x.prefix_queries = &prefix_queries->Add(x.base);
    x.prefix_hits = &prefix_hits->Add(x.base);
    x.spec_drafts = &spec_drafts->Add(x.base);
    x.spec_draft_tokens = &spec_draft_tokens->Add(x.base);
    x.spec_accepted = &spec_accepted->Add(x.base);
    for (FinishReason reason :
         {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort, FinishReason::kError}) {
      x.success[reason] = &success->Add(x.with("finished_reason", std::string(to_string(reason))));
    }
    x.ttft = &ttft->Add(x.base, kTtftBuckets);
    x.itl = &itl->Add(x.base, kTokenLatencyBuckets);
    x.e2e = &e2e->Add(x.base, kRequestLatencyBuckets);
    x.queue = &queue->Add(x.base, kRequestLatencyBuckets);
    if (m.first == nullptr) m.first = ms.get();
    m.models.emplace(name, std::move(ms));
  }

  auto* rejected = counter_family("pagoda:requests_rejected_total",
                                  "Requests refused before generation, by reason.");
  for (Rejection reason : {Rejection::kQueueFull, Rejection::kQueueTimeout, Rejection::kLoading,
                           Rejection::kDraining, Rejection::kConnections, Rejection::kInvalid,
                           Rejection::kUnauthorized, Rejection::kModelsBusy}) {
    m.rejected[reason] = &rejected->Add(m.with("reason", rejection_name(reason)));
  }
  auto* aborted =
      counter_family("pagoda:requests_aborted_total", "Requests aborted by the server, by cause.");
  for (AbortCause cause :
       {AbortCause::kClientDisconnect, AbortCause::kSlowReader, AbortCause::kShutdown}) {
    m.aborted[cause] = &aborted->Add(m.with("cause", abort_name(cause)));
  }
  m.http_family =
      counter_family("pagoda:http_requests_total", "HTTP responses sent, by status code.");
  m.connections = &gauge_family("pagoda:http_connections", "Open HTTP connections.")->Add(m.base);
  m.rss = &gauge_family("process_resident_memory_bytes", "Resident memory size in bytes.")->Add({});
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::observe_finished(const std::string& model, const RequestOutput& out) {
  Impl::ModelSeries& m = impl_->series(model);
  auto it = m.success.find(out.finish_reason);
  if (it != m.success.end()) it->second->Increment();
  const RequestTimings& t = out.timings;
  if (out.usage.completion_tokens > 0) m.ttft->Observe(t.ttft_seconds);
  m.e2e->Observe(t.e2e_seconds);
  m.queue->Observe(t.queue_seconds);
}

void ServerMetrics::observe_inter_token(const std::string& model, double seconds) {
  impl_->series(model).itl->Observe(seconds);
}

void ServerMetrics::count_rejection(Rejection reason) {
  impl_->rejected.at(reason)->Increment();
}

void ServerMetrics::count_abort(AbortCause cause) {
  impl_->aborted.at(cause)->Increment();
}

void ServerMetrics::count_http_response(int status) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  auto it = m.http.find(status);
  if (it == m.http.end()) {
    it = m.http.emplace(status, &m.http_family->Add(m.with("code", std::to_string(status)))).first;
  }
  it->second->Increment();
}

void ServerMetrics::connection_opened() {
  impl_->connections->Increment();
}
void ServerMetrics::connection_closed() {
  impl_->connections->Decrement();
}

std::string ServerMetrics::render(const std::vector<ModelMetricsInput>& models) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  for (const ModelMetricsInput& in : models) {
    auto found = m.models.find(in.name);
    if (found == m.models.end()) continue;
    Impl::ModelSeries& x = *found->second;
    x.loaded->Set(in.state == ModelState::kLoaded ? 1 : 0);
    if (!in.stats) {
      x.running->Set(0);
      x.waiting->Set(0);
      x.kv_usage->Set(0);
      x.ready->Set(in.loadable ? 1 : 0);
      continue;
    }
    const EngineStats& stats = *in.stats;
    x.running->Set(stats.num_running);
    x.waiting->Set(stats.num_waiting);
    x.kv_usage->Set(stats.kv_cache_usage);
    x.ready->Set(stats.loop_alive ? 1 : 0);
    const auto advance = [&](Counter* c, int64_t now, int64_t before) {
      if (now > before) c->Increment(static_cast<double>(now - before));
    };
    // A reloaded model's engine counts from zero again.
    const EngineStats prev = x.last_identity == in.engine_identity ? x.last : EngineStats{};
    advance(x.prompt_tokens, stats.prompt_tokens_total, prev.prompt_tokens_total);
    advance(x.generation_tokens, stats.generation_tokens_total, prev.generation_tokens_total);
    advance(x.preemptions, stats.num_preemptions, prev.num_preemptions);
    advance(x.preemptions_kv_full, stats.num_preemptions, prev.num_preemptions);
    advance(x.prefix_queries, stats.prefix_cache_queries, prev.prefix_cache_queries);
    advance(x.prefix_hits, stats.prefix_cache_hits, prev.prefix_cache_hits);
    advance(x.spec_drafts, stats.spec_decode_num_drafts, prev.spec_decode_num_drafts);
    advance(x.spec_draft_tokens, stats.spec_decode_num_draft_tokens,
            prev.spec_decode_num_draft_tokens);
    advance(x.spec_accepted, stats.spec_decode_num_accepted_tokens,
            prev.spec_decode_num_accepted_tokens);
    const std::vector<int64_t>& per_pos = stats.spec_decode_num_accepted_tokens_per_pos;
    for (size_t i = 0; i < per_pos.size(); ++i) {
      if (i >= x.spec_per_pos.size()) {
        x.spec_per_pos.push_back(
            &m.spec_per_pos_family->Add(x.with("position", std::to_string(i))));
      }
      const int64_t before = i < prev.spec_decode_num_accepted_tokens_per_pos.size()
                                 ? prev.spec_decode_num_accepted_tokens_per_pos[i]
                                 : 0;
      advance(x.spec_per_pos[i], per_pos[i], before);
    }
    x.last = stats;
    x.last_identity = in.engine_identity;
  }
  m.rss->Set(resident_bytes());
  prometheus::TextSerializer serializer;
  return serializer.Serialize(m.registry->Collect());
}

}  // namespace pagoda::server
