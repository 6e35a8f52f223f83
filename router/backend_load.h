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

// The sum over label sets of the samples of metric `name` (e.g. a counter such as
// "vllm:spec_decode_num_drafts_total"); nullopt when no sample of it parses. Lines that do not
// parse and values that are not finite are skipped.
std::optional<double> sum_metric(std::string_view prometheus_text, std::string_view name);

}  // namespace pagoda::router
