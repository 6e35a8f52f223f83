// What the router reads from a backend's /metrics (Prometheus text, hostile input): the queue
// length (vllm:num_requests_waiting) and KV-cache usage (vllm:kv_cache_usage_perc), summed over
// label sets (one per model/engine). Lines that do not parse are skipped; a value that is not a
// finite number is ignored.
#pragma once

#include <optional>
#include <string_view>

namespace pagoda::router {

struct BackendLoad {
  std::optional<double> num_waiting;
  std::optional<double> kv_usage;  // clamped to [0, 1]
};

BackendLoad parse_backend_load(std::string_view prometheus_text);

}  // namespace pagoda::router
