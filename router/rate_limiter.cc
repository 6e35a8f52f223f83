#include "router/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace pagoda::router {

namespace {

constexpr uint64_t kDefaultMaxTokens = 256;
constexpr double kMsPerMinute = 60000.0;

int32_t seconds_until(double deficit, double per_minute) {
  double s = std::ceil(deficit / per_minute * 60.0);
  return static_cast<int32_t>(std::clamp(s, 1.0, 3600.0));
}

}  // namespace

uint64_t estimate_tokens(size_t body_bytes, std::optional<uint64_t> max_tokens) {
  uint64_t out = max_tokens.value_or(kDefaultMaxTokens);
  uint64_t prompt = body_bytes / 4;
  return out > UINT64_MAX - prompt ? UINT64_MAX : out + prompt;
}

void RateLimiter::refill(Bucket& b, const RateLimit& limit, TimePoint now) const {
  const double rpm = limit.requests_per_minute;
  const double tpm = static_cast<double>(limit.tokens_per_minute);
  if (b.fresh) {
    b.requests = rpm;
    b.tokens = tpm;
    b.fresh = false;
  } else if (now > b.last) {
    double ms = std::chrono::duration<double, std::milli>(now - b.last).count();
    b.requests = std::min(rpm, b.requests + ms * rpm / kMsPerMinute);
    b.tokens = std::min(tpm, b.tokens + ms * tpm / kMsPerMinute);
  }
  b.last = std::max(b.last, now);
}

void RateLimiter::evict_idle(TimePoint now, const RateLimit& limit) {
  // An idle bucket refilled to its allowance is the same as no bucket. The limit of the key being
  // added stands in for each bucket's own: the keys listed in the config are few and
  // re-created full, so at worst a listed key's partly used bucket is forgiven.
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    refill(it->second, limit, now);
    bool full = it->second.requests >= limit.requests_per_minute &&
                it->second.tokens >= static_cast<double>(limit.tokens_per_minute);
    it = full ? buckets_.erase(it) : std::next(it);
  }
}

RateLimiter::Decision RateLimiter::acquire(const std::string& api_key, const RateLimit& limit,
                                           uint64_t tokens, TimePoint now) {
  if (limit.requests_per_minute == 0 && limit.tokens_per_minute == 0) return {};
  std::lock_guard lock(mu_);
  Bucket* b = nullptr;
  auto it = buckets_.find(api_key);
  if (it != buckets_.end()) {
    b = &it->second;
  } else {
    if (buckets_.size() >= kMaxBuckets) evict_idle(now, limit);
    b = buckets_.size() < kMaxBuckets ? &buckets_[api_key] : &overflow_;
  }
  refill(*b, limit, now);
  Decision d;
  const double want =
      std::min(static_cast<double>(tokens), static_cast<double>(limit.tokens_per_minute));
  if (limit.requests_per_minute > 0 && b->requests < 1.0) {
    d.allowed = false;
    d.retry_after_s = seconds_until(1.0 - b->requests, limit.requests_per_minute);
    return d;
  }
  if (limit.tokens_per_minute > 0 && b->tokens < want) {
    d.allowed = false;
    d.tokens_exhausted = true;
    d.retry_after_s = seconds_until(want - b->tokens, static_cast<double>(limit.tokens_per_minute));
    return d;
  }
  if (limit.requests_per_minute > 0) b->requests -= 1.0;
  if (limit.tokens_per_minute > 0) b->tokens -= want;
  return d;
}

size_t RateLimiter::num_buckets() const {
  std::lock_guard lock(mu_);
  return buckets_.size();
}

}  // namespace pagoda::router
