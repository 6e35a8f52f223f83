#include "server/server_metrics.h"

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

}  // namespace

struct ServerMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  Labels base;

  Gauge* running = nullptr;
  Gauge* waiting = nullptr;
  Gauge* kv_usage = nullptr;
  Counter* prompt_tokens = nullptr;
  Counter* generation_tokens = nullptr;
  Counter* preemptions = nullptr;
  Counter* preemptions_kv_full = nullptr;  // pagoda:preemptions_total{reason="kv_cache_full"}
  Counter* prefix_queries = nullptr;
  Counter* prefix_hits = nullptr;
  Counter* spec_drafts = nullptr;
  Counter* spec_draft_tokens = nullptr;
  Counter* spec_accepted = nullptr;
  prometheus::Family<Counter>* spec_per_pos_family = nullptr;
  std::vector<Counter*> spec_per_pos;  // guarded by mu; grows with the positions seen
  std::map<FinishReason, Counter*> success;
  Histogram* ttft = nullptr;
  Histogram* itl = nullptr;
  Histogram* e2e = nullptr;
  Histogram* queue = nullptr;

  std::map<Rejection, Counter*> rejected;
  std::map<AbortCause, Counter*> aborted;
  prometheus::Family<Counter>* http_family = nullptr;
  std::map<int, Counter*> http;  // guarded by mu
  Gauge* connections = nullptr;
  Gauge* ready = nullptr;

  std::mutex mu;       // http map, scrape deltas, serialization
  EngineStats last{};  // the previous scrape's counters
  bool have_last = false;

  Labels with(const std::string& key, const std::string& value) const {
    Labels l = base;
    l[key] = value;
    return l;
  }
};

ServerMetrics::ServerMetrics(const std::string& model_name) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  prometheus::Registry& r = *m.registry;
  m.base = {{"model_name", model_name}, {"engine", "0"}};
  const auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add(m.base);
  };
  const auto counter = [&](const char* name, const char* help) {
    return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(m.base);
  };
  const auto histogram = [&](const char* name, const char* help,
                             const Histogram::BucketBoundaries& buckets) {
    return &prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add(m.base, buckets);
  };
  m.running = gauge("vllm:num_requests_running", "Number of requests in model execution batches.");
  m.waiting = gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.");
  m.kv_usage = gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.");
  m.prompt_tokens = counter("vllm:prompt_tokens_total", "Number of prefill tokens processed.");
  m.generation_tokens =
      counter("vllm:generation_tokens_total", "Number of generation tokens processed.");
  m.preemptions =
      counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.");
  // The engine preempts only when the KV cache has no block for a running request (the victim
  // is recomputed later); the reason label leaves room for others.
  m.preemptions_kv_full = &prometheus::BuildCounter()
                               .Name("pagoda:preemptions_total")
                               .Help("Preemptions, by reason.")
                               .Register(r)
                               .Add(m.with("reason", "kv_cache_full"));
  m.prefix_queries = counter("vllm:prefix_cache_queries_total",
                             "Prefix cache queries, in terms of number of queried tokens.");
  m.prefix_hits = counter("vllm:prefix_cache_hits_total",
                          "Prefix cache hits, in terms of number of cached tokens.");
  // Speculative decoding, with vLLM's names (vllm/v1/spec_decode/metrics.py).
  m.spec_drafts = counter("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.");
  m.spec_draft_tokens =
      counter("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.");
  m.spec_accepted =
      counter("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.");
  m.spec_per_pos_family = &prometheus::BuildCounter()
                               .Name("vllm:spec_decode_num_accepted_tokens_per_pos")
                               .Help("Accepted tokens per draft position.")
                               .Register(r);
  auto& success = prometheus::BuildCounter()
                      .Name("vllm:request_success_total")
                      .Help("Count of successfully processed requests.")
                      .Register(r);
  for (FinishReason reason :
       {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort, FinishReason::kError}) {
    m.success[reason] = &success.Add(m.with("finished_reason", std::string(to_string(reason))));
  }
  m.ttft = histogram("vllm:time_to_first_token_seconds",
                     "Histogram of time to first token in seconds.", kTtftBuckets);
  m.itl = histogram("vllm:inter_token_latency_seconds",
                    "Histogram of inter-token latency in seconds.", kTokenLatencyBuckets);
  m.e2e = histogram("vllm:e2e_request_latency_seconds",
                    "Histogram of e2e request latency in seconds.", kRequestLatencyBuckets);
  m.queue =
      histogram("vllm:request_queue_time_seconds",
                "Histogram of time spent in WAITING phase for request.", kRequestLatencyBuckets);

  auto& rejected = prometheus::BuildCounter()
                       .Name("pagoda:requests_rejected_total")
                       .Help("Requests refused before generation, by reason.")
                       .Register(r);
  for (Rejection reason :
       {Rejection::kQueueFull, Rejection::kQueueTimeout, Rejection::kLoading, Rejection::kDraining,
        Rejection::kConnections, Rejection::kInvalid, Rejection::kUnauthorized}) {
    m.rejected[reason] = &rejected.Add(m.with("reason", rejection_name(reason)));
  }
  auto& aborted = prometheus::BuildCounter()
                      .Name("pagoda:requests_aborted_total")
                      .Help("Requests aborted by the server, by cause.")
                      .Register(r);
  for (AbortCause cause :
       {AbortCause::kClientDisconnect, AbortCause::kSlowReader, AbortCause::kShutdown}) {
    m.aborted[cause] = &aborted.Add(m.with("cause", abort_name(cause)));
  }
  m.http_family = &prometheus::BuildCounter()
                       .Name("pagoda:http_requests_total")
                       .Help("HTTP responses sent, by status code.")
                       .Register(r);
  m.connections = gauge("pagoda:http_connections", "Open HTTP connections.");
  m.ready = gauge("pagoda:engine_ready", "1 when the model is loaded and the engine loop alive.");
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::observe_finished(const RequestOutput& out) {
  Impl& m = *impl_;
  auto it = m.success.find(out.finish_reason);
  if (it != m.success.end()) it->second->Increment();
  const RequestTimings& t = out.timings;
  if (out.usage.completion_tokens > 0) m.ttft->Observe(t.ttft_seconds);
  m.e2e->Observe(t.e2e_seconds);
  m.queue->Observe(t.queue_seconds);
}

void ServerMetrics::observe_inter_token(double seconds) {
  impl_->itl->Observe(seconds);
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

std::string ServerMetrics::render(const EngineStats* stats) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mu);
  if (stats != nullptr) {
    m.running->Set(stats->num_running);
    m.waiting->Set(stats->num_waiting);
    m.kv_usage->Set(stats->kv_cache_usage);
    m.ready->Set(stats->loop_alive ? 1 : 0);
    const auto advance = [&](Counter* c, int64_t now, int64_t before) {
      if (now > before) c->Increment(static_cast<double>(now - before));
    };
    const EngineStats prev = m.have_last ? m.last : EngineStats{};
    advance(m.prompt_tokens, stats->prompt_tokens_total, prev.prompt_tokens_total);
    advance(m.generation_tokens, stats->generation_tokens_total, prev.generation_tokens_total);
    advance(m.preemptions, stats->num_preemptions, prev.num_preemptions);
    advance(m.preemptions_kv_full, stats->num_preemptions, prev.num_preemptions);
    advance(m.prefix_queries, stats->prefix_cache_queries, prev.prefix_cache_queries);
    advance(m.prefix_hits, stats->prefix_cache_hits, prev.prefix_cache_hits);
    advance(m.spec_drafts, stats->spec_decode_num_drafts, prev.spec_decode_num_drafts);
    advance(m.spec_draft_tokens, stats->spec_decode_num_draft_tokens,
            prev.spec_decode_num_draft_tokens);
    advance(m.spec_accepted, stats->spec_decode_num_accepted_tokens,
            prev.spec_decode_num_accepted_tokens);
    const std::vector<int64_t>& per_pos = stats->spec_decode_num_accepted_tokens_per_pos;
    for (size_t i = 0; i < per_pos.size(); ++i) {
      if (i >= m.spec_per_pos.size()) {
        m.spec_per_pos.push_back(
            &m.spec_per_pos_family->Add(m.with("position", std::to_string(i))));
      }
      const int64_t before = i < prev.spec_decode_num_accepted_tokens_per_pos.size()
                                 ? prev.spec_decode_num_accepted_tokens_per_pos[i]
                                 : 0;
      advance(m.spec_per_pos[i], per_pos[i], before);
    }
    m.last = *stats;
    m.have_last = true;
  } else {
    m.ready->Set(0);
  }
  prometheus::TextSerializer serializer;
  return serializer.Serialize(m.registry->Collect());
}

}  // namespace pagoda::server
