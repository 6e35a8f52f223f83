#include "router/backend_pool.h"

#include "router/prefix_affinity.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pagoda::router {

namespace {

bool serves_model(const BackendConfig& c, const std::string& model) {
  return std::find(c.models.begin(), c.models.end(), model) != c.models.end();
}

}  // namespace

BackendPool::BackendPool(const RouterConfig& config, TimePoint now) {
  reconfigure(config, now);
}

void BackendPool::reconfigure(const RouterConfig& config, TimePoint now) {
  std::lock_guard lock(mu_);
  health_ = config.health;
  balancing_ = config.balancing;
  std::vector<BackendPtr> next;
  next.reserve(config.backends.size());
  for (const BackendConfig& c : config.backends) {
    BackendPtr kept;
    for (const BackendPtr& old : backends_) {
      if (old->config.name == c.name && old->config.url_text == c.url_text) kept = old;
    }
    if (kept && kept->config.models == c.models && kept->config.weight == c.weight &&
        kept->config.api_key == c.api_key) {
      next.push_back(kept);
      continue;
    }
    auto b = std::make_shared<Backend>();
    b->config = c;
    if (kept) {  // same replica, other settings: keep what we know of its health and load
      b->admitted = kept->admitted;
      b->consecutive_failures = kept->consecutive_failures;
      b->failed_probes = kept->failed_probes;
      b->next_probe = kept->next_probe;
      b->num_waiting = kept->num_waiting;
      b->kv_usage = kept->kv_usage;
    } else {
      b->next_probe = now;
    }
    next.push_back(std::move(b));
  }
  backends_ = std::move(next);
}

BackendPool::BackendPtr BackendPool::acquire(const std::string& model,
                                             const std::vector<const Backend*>& tried,
                                             std::optional<uint64_t> affinity) {
  std::lock_guard lock(mu_);
  std::vector<Backend*> eligible;
  const size_t n = backends_.size();
  const uint64_t start = rotation_++;
  for (size_t k = 0; k < n; ++k) {
    const BackendPtr& b = backends_[(start + k) % n];
    if (!b->admitted || !serves_model(b->config, model)) continue;
    if (std::find(tried.begin(), tried.end(), b.get()) != tried.end()) continue;
    eligible.push_back(b.get());
  }
  if (eligible.empty()) return nullptr;
  Backend* best = nullptr;
  if (affinity && balancing_.prefix_affinity && eligible.size() > 1) {
    int64_t total = 1;
    for (Backend* b : eligible)
      total += b->outstanding;
    const auto cap =
        static_cast<int64_t>(std::ceil(balancing_.load_factor * static_cast<double>(total) /
                                       static_cast<double>(eligible.size())));
    uint64_t best_score = 0;
    for (Backend* b : eligible) {
      if (b->outstanding + 1 > cap) continue;
      uint64_t score = rendezvous_score(*affinity, b->config.name);
      if (!best || score > best_score) {
        best = b;
        best_score = score;
      }
    }
  }
  if (!best) {
    double best_score = std::numeric_limits<double>::infinity();
    for (Backend* b : eligible) {
      double load = static_cast<double>(b->outstanding) + b->num_waiting + 1.0;
      double score = load * (1.0 + b->kv_usage) / b->config.weight;
      if (score < best_score) {
        best_score = score;
        best = b;
      }
    }
  }
  ++best->outstanding;
  for (const BackendPtr& b : backends_) {
    if (b.get() == best) return b;
  }
  return nullptr;  // unreachable: best came from backends_
}

void BackendPool::release(Backend& backend) {
  std::lock_guard lock(mu_);
  if (backend.outstanding > 0) --backend.outstanding;
}

BackendPool::Transition BackendPool::count_failure(Backend& b, TimePoint now) {
  ++b.consecutive_failures;
  if (b.admitted && b.consecutive_failures >= health_.failures_to_eject) {
    b.admitted = false;
    b.failed_probes = 0;
    b.next_probe = now + backoff(0);
    return Transition::kEjected;
  }
  return Transition::kNone;
}

BackendPool::Transition BackendPool::report_failure(Backend& backend, TimePoint now) {
  std::lock_guard lock(mu_);
  return count_failure(backend, now);
}

void BackendPool::report_success(Backend& backend) {
  std::lock_guard lock(mu_);
  if (backend.admitted) backend.consecutive_failures = 0;
}

std::vector<BackendPool::BackendPtr> BackendPool::due_probes(TimePoint now) {
  std::lock_guard lock(mu_);
  std::vector<BackendPtr> due;
  for (const BackendPtr& b : backends_) {
    if (b->next_probe <= now) {
      b->next_probe = now + std::chrono::milliseconds(health_.timeout_ms) +
                      std::chrono::milliseconds(health_.interval_ms);
      due.push_back(b);
    }
  }
  return due;
}

BackendPool::Transition BackendPool::report_probe(Backend& backend, bool ok, TimePoint now) {
  std::lock_guard lock(mu_);
  Backend& b = backend;
  if (ok) {
    b.consecutive_failures = 0;
    b.failed_probes = 0;
    b.next_probe = now + std::chrono::milliseconds(health_.interval_ms);
    if (!b.admitted) {
      b.admitted = true;
      return Transition::kReadmitted;
    }
    return Transition::kNone;
  }
  if (!b.admitted) {
    if (b.failed_probes < 32) ++b.failed_probes;
    b.next_probe = now + backoff(b.failed_probes);
    return Transition::kNone;
  }
  Transition t = count_failure(b, now);
  if (t == Transition::kNone) b.next_probe = now + std::chrono::milliseconds(health_.interval_ms);
  return t;
}

void BackendPool::report_load(Backend& backend, double num_waiting, double kv_usage) {
  std::lock_guard lock(mu_);
  backend.num_waiting = std::clamp(num_waiting, 0.0, 1e9);
  backend.kv_usage = std::clamp(kv_usage, 0.0, 1.0);
}

bool BackendPool::has_admitted(const std::string& model) const {
  std::lock_guard lock(mu_);
  for (const BackendPtr& b : backends_) {
    if (b->admitted && serves_model(b->config, model)) return true;
  }
  return false;
}

bool BackendPool::serves(const std::string& model) const {
  std::lock_guard lock(mu_);
  for (const BackendPtr& b : backends_) {
    if (serves_model(b->config, model)) return true;
  }
  return false;
}

std::vector<BackendPool::BackendView> BackendPool::snapshot() const {
  std::lock_guard lock(mu_);
  std::vector<BackendView> v;
  for (const BackendPtr& b : backends_) {
    v.push_back({b->config.name, b->admitted, b->outstanding, b->config.models, b->num_waiting});
  }
  return v;
}

std::chrono::milliseconds BackendPool::backoff(uint32_t failed_probes) const {
  uint64_t ms = health_.interval_ms;
  for (uint32_t i = 0; i < failed_probes && ms < health_.max_backoff_ms; ++i)
    ms *= 2;
  return std::chrono::milliseconds(std::min<uint64_t>(ms, health_.max_backoff_ms));
}

}  // namespace pagoda::router
