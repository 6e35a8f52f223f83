// RateLimiter: per-API-key token buckets (requests per minute and tokens per minute), the
// ladder's level-1 rate limits. Each bucket holds at most one minute's allowance and refills
// continuously; a request takes 1 from the request bucket and its estimated tokens from the token
// bucket, or nothing and is refused with the seconds until it would fit. Pure state with an
// injected clock; thread-safe (one mutex).
//
// The router has no tokenizer: a request's tokens are estimated before it runs as
// body bytes / 4 + its max_tokens (or max_completion_tokens, or 256 when absent), an upper
// bound for the typical case. A request larger than a whole minute's allowance is charged the
// allowance (it passes when the bucket is full instead of never).
//
// Memory is bounded: at most kMaxBuckets keys; when full, buckets that have refilled completely
// (idle keys) are dropped, and if none has, new keys share one overflow bucket.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "router/ladder_config.h"

namespace pagoda::router {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;
  static constexpr size_t kMaxBuckets = 100000;

  struct Decision {
    bool allowed = true;
    bool tokens_exhausted = false;  // else requests were (when !allowed)
    int32_t retry_after_s = 0;
  };

  Decision acquire(const std::string& api_key, const RateLimit& limit, uint64_t tokens,
                   TimePoint now);
  size_t num_buckets() const;

 private:
  struct Bucket {
    double requests = 0;
    double tokens = 0;
    TimePoint last{};
    bool fresh = true;
  };
  void refill(Bucket& b, const RateLimit& limit, TimePoint now) const;
  void evict_idle(TimePoint now, const RateLimit& limit);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
  Bucket overflow_;
};

// The token estimate described above, from a request's JSON fields.
uint64_t estimate_tokens(size_t body_bytes, std::optional<uint64_t> max_tokens);

}  // namespace pagoda::router
