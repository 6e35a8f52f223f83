#include "router/backend_load.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace pagoda::router {

namespace {

// "name{labels} value [timestamp]" or "name value": the metric name and the value text.
bool split_sample(std::string_view line, std::string_view& name, std::string_view& value) {
  size_t name_end = line.find_first_of("{ ");
  if (name_end == std::string_view::npos || name_end == 0) return false;
  name = line.substr(0, name_end);
  size_t rest = name_end;
  if (line[rest] == '{') {
    // Label values may contain '}' inside quotes; scan with quote and escape state.
    bool quoted = false;
    size_t i = rest + 1;
    for (; i < line.size(); ++i) {
      char c = line[i];
      if (quoted && c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = !quoted;
      } else if (!quoted && c == '}') {
        break;
      }
    }
    if (i >= line.size()) return false;
    rest = i + 1;
  }
  while (rest < line.size() && line[rest] == ' ')
    ++rest;
  size_t end = line.find(' ', rest);
  value = line.substr(rest, end == std::string_view::npos ? std::string_view::npos : end - rest);
  return !value.empty();
}

std::optional<double> parse_value(std::string_view text) {
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) {
    return std::nullopt;
  }
  return v;
}

// Calls fn(name, value text) for every sample line of Prometheus text (comments, blank lines and
// lines that do not parse skipped).
template <typename Fn>
void for_each_sample(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    std::string_view name;
    std::string_view value;
    if (split_sample(line, name, value)) fn(name, value);
  }
}

}  // namespace

BackendLoad parse_backend_load(std::string_view text) {
  BackendLoad load;
  for_each_sample(text, [&load](std::string_view name, std::string_view value) {
    std::optional<double>* slot = nullptr;
    if (name == "vllm:num_requests_waiting") slot = &load.num_waiting;
    if (name == "vllm:kv_cache_usage_perc") slot = &load.kv_usage;
    if (slot == nullptr) return;
    std::optional<double> v = parse_value(value);
    if (!v || *v < 0) return;
    *slot = slot->value_or(0.0) + *v;
  });
  if (load.num_waiting) load.num_waiting = std::min(*load.num_waiting, 1e9);
  if (load.kv_usage) load.kv_usage = std::min(*load.kv_usage, 1.0);
  return load;
}

std::optional<double> sum_metric(std::string_view text, std::string_view wanted) {
  std::optional<double> sum;
  for_each_sample(text, [&](std::string_view name, std::string_view value) {
    if (name != wanted) return;
    if (const std::optional<double> v = parse_value(value)) sum = sum.value_or(0.0) + *v;
  });
  return sum;
}

}  // namespace pagoda::router
