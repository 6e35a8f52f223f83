#include "router/router_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace pagoda::router {

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kOk:
      return "ok";
    case Outcome::kError:
      return "error";
    case Outcome::kStreamCut:
      return "stream_cut";
    case Outcome::kClientGone:
      return "client_gone";
  }
  return "unknown";
}

const char* cause_name(ErrorCause c) {
  switch (c) {
    case ErrorCause::kInvalidRequest:
      return "invalid_request";
    case ErrorCause::kModelNotFound:
      return "model_not_found";
    case ErrorCause::kNoBackend:
      return "no_backend";
    case ErrorCause::kUpstreamConnect:
      return "upstream_connect";
    case ErrorCause::kUpstream5xx:
      return "upstream_5xx";
    case ErrorCause::kUpstreamTimeout:
      return "upstream_timeout";
    case ErrorCause::kAttemptsExhausted:
      return "attempts_exhausted";
    case ErrorCause::kStreamCut:
      return "stream_cut";
    case ErrorCause::kClientDisconnect:
      return "client_disconnect";
    case ErrorCause::kRateLimited:
      return "rate_limited";
    case ErrorCause::kQueueShed:
      return "queue_shed";
    case ErrorCause::kQueueTimeout:
      return "queue_timeout";
    case ErrorCause::kFeatureDisabled:
      return "feature_disabled";
    case ErrorCause::kCircuitOpen:
      return "circuit_open";
  }
  return "unknown";
}

const char* action_name(LadderAction a) {
  switch (a) {
    case LadderAction::kClamped:
      return "clamped_max_tokens";
    case LadderAction::kRerouted:
      return "rerouted";
    case LadderAction::kCacheHit:
      return "cache_hit";
    case LadderAction::kPreset:
      return "preset_reply";
  }
  return "unknown";
}

struct RouterMetrics::Impl {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  prometheus::Family<prometheus::Counter>& requests =
      prometheus::BuildCounter()
          .Name("pagoda_router_requests_total")
          .Help("Client requests by the backend that answered and how they ended.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& errors =
      prometheus::BuildCounter()
          .Name("pagoda_router_errors_total")
          .Help("Failures by cause (failed attempts and failed requests).")
          .Register(*registry);
  prometheus::Counter& retries = prometheus::BuildCounter()
                                     .Name("pagoda_router_retries_total")
                                     .Help("Attempts retried on another replica.")
                                     .Register(*registry)
                                     .Add({});
  prometheus::Counter& fallbacks = prometheus::BuildCounter()
                                       .Name("pagoda_router_fallback_requests_total")
                                       .Help("Requests sent to the fallback upstream.")
                                       .Register(*registry)
                                       .Add({});
  prometheus::Family<prometheus::Counter>& ejections =
      prometheus::BuildCounter()
          .Name("pagoda_router_ejections_total")
          .Help("Backends ejected after failures (passive or active).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& readmissions =
      prometheus::BuildCounter()
          .Name("pagoda_router_readmissions_total")
          .Help("Ejected backends readmitted by a successful /health probe.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& admitted =
      prometheus::BuildGauge()
          .Name("pagoda_router_backend_up")
          .Help("1 if the backend is admitted (healthy), 0 if ejected.")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& outstanding =
      prometheus::BuildGauge()
          .Name("pagoda_router_backend_outstanding_requests")
          .Help("Requests in flight to the backend.")
          .Register(*registry);
  prometheus::Gauge& degradation = prometheus::BuildGauge()
                                       .Name("pagoda_router_degradation_level")
                                       .Help("Current degradation ladder level (0 = normal).")
                                       .Register(*registry)
                                       .Add({});
  prometheus::Family<prometheus::Counter>& level_changes =
      prometheus::BuildCounter()
          .Name("pagoda_router_degradation_changes_total")
          .Help("Ladder level changes by direction (up, down).")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& ladder_actions =
      prometheus::BuildCounter()
          .Name("pagoda_router_ladder_actions_total")
          .Help("Requests the ladder changed or answered itself, by action.")
          .Register(*registry);
  prometheus::Family<prometheus::Counter>& cache_lookups =
      prometheus::BuildCounter()
          .Name("pagoda_router_cache_lookups_total")
          .Help("Response-cache lookups (level >= 4) by result (hit, miss).")
          .Register(*registry);
  prometheus::Counter& cache_stores = prometheus::BuildCounter()
                                          .Name("pagoda_router_cache_stores_total")
                                          .Help("Responses stored in the response cache.")
                                          .Register(*registry)
                                          .Add({});
  prometheus::Family<prometheus::Gauge>& cache_size =
      prometheus::BuildGauge()
          .Name("pagoda_router_cache_size")
          .Help("Response cache size by unit (entries, bytes).")
          .Register(*registry);
  prometheus::Family<prometheus::Gauge>& queue =
      prometheus::BuildGauge()
          .Name("pagoda_router_queue_requests")
          .Help("Requests in the router's admission queue by state (waiting, running).")
          .Register(*registry);
};

RouterMetrics::RouterMetrics() : impl_(std::make_unique<Impl>()) {
  // Every label value known in advance starts at 0, as Prometheus advises ("avoid missing
  // metrics"): rate() and the dashboard's panels see the series from the first scrape instead of
  // "no data" until the first event, and a scrape lists every family the dashboard may name.
  for (int c = 0; c <= static_cast<int>(ErrorCause::kCircuitOpen); ++c) {
    impl_->errors.Add({{"cause", cause_name(static_cast<ErrorCause>(c))}});
  }
  for (int a = 0; a <= static_cast<int>(LadderAction::kPreset); ++a) {
    impl_->ladder_actions.Add({{"action", action_name(static_cast<LadderAction>(a))}});
  }
  for (const char* direction : {"up", "down"}) {
    impl_->level_changes.Add({{"direction", direction}});
  }
  for (const char* result : {"hit", "miss"})
    impl_->cache_lookups.Add({{"result", result}});
}
RouterMetrics::~RouterMetrics() = default;

void RouterMetrics::count_request(const std::string& backend, Outcome outcome) {
  impl_->requests.Add({{"backend", backend}, {"outcome", outcome_name(outcome)}}).Increment();
}

void RouterMetrics::count_error(ErrorCause cause) {
  impl_->errors.Add({{"cause", cause_name(cause)}}).Increment();
}

void RouterMetrics::count_retry() {
  impl_->retries.Increment();
}

void RouterMetrics::count_fallback() {
  impl_->fallbacks.Increment();
}

void RouterMetrics::count_ejection(const std::string& backend) {
  impl_->ejections.Add({{"backend", backend}}).Increment();
}

void RouterMetrics::count_readmission(const std::string& backend) {
  impl_->readmissions.Add({{"backend", backend}}).Increment();
}

void RouterMetrics::count_ladder_action(LadderAction action) {
  impl_->ladder_actions.Add({{"action", action_name(action)}}).Increment();
}

void RouterMetrics::count_cache_lookup(bool hit) {
  impl_->cache_lookups.Add({{"result", hit ? "hit" : "miss"}}).Increment();
}

void RouterMetrics::count_cache_store() {
  impl_->cache_stores.Increment();
}

void RouterMetrics::set_degradation_level(int level) {
  impl_->degradation.Set(level);
}

void RouterMetrics::count_level_change(int from, int to) {
  if (from != to) impl_->level_changes.Add({{"direction", to > from ? "up" : "down"}}).Increment();
}

std::string RouterMetrics::render(const std::vector<BackendPool::BackendView>& backends,
                                  const LadderGauges& ladder) {
  impl_->cache_size.Add({{"unit", "entries"}}).Set(static_cast<double>(ladder.cache_entries));
  impl_->cache_size.Add({{"unit", "bytes"}}).Set(static_cast<double>(ladder.cache_bytes));
  impl_->queue.Add({{"state", "waiting"}}).Set(static_cast<double>(ladder.queue_waiting));
  impl_->queue.Add({{"state", "running"}}).Set(static_cast<double>(ladder.queue_running));
  for (const auto& b : backends) {
    impl_->admitted.Add({{"backend", b.name}}).Set(b.admitted ? 1.0 : 0.0);
    impl_->outstanding.Add({{"backend", b.name}}).Set(static_cast<double>(b.outstanding));
    impl_->ejections.Add({{"backend", b.name}});  // 0 until the first (see the constructor)
    impl_->readmissions.Add({{"backend", b.name}});
  }
  prometheus::TextSerializer serializer;
  return serializer.Serialize(impl_->registry->Collect());
}

}  // namespace pagoda::router
