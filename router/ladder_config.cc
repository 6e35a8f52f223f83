#include "router/ladder_config.h"

#include <algorithm>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "router/config_fields.h"

namespace pagoda::router {

namespace {

constexpr size_t kMaxKeys = 65536;
constexpr size_t kMaxRoutes = 4096;
constexpr uint32_t kMaxMs = 86400000;  // one day

// Request fields level 4 can turn off (each refused when present with a non-neutral value).
constexpr std::string_view kDisableable[] = {
    "n",      "best_of", "logprobs",        "top_logprobs",   "tools",
    "stream", "echo",    "response_format", "prompt_logprobs"};

Status read_u32(const YAML::Node& parent, const char* key, const std::string& where, uint32_t& out,
                uint64_t min, uint64_t max) {
  if (!parent[key]) return Status();
  PAGODA_ASSIGN_OR_RETURN(uint64_t v, get_uint(parent[key], where + "." + key, min, max));
  out = static_cast<uint32_t>(v);
  return Status();
}

Status parse_level(const YAML::Node& node, const std::string& path, LadderLevel& level) {
  PAGODA_RETURN_IF_ERROR(check_keys(node, path,
                                    {"queue_length", "backend_waiting", "p95_ttft_ms",
                                     "p95_tpot_ms", "error_rate", "cooldown_ms"}));
  for (auto [key, field] :
       {std::pair{"queue_length", &level.queue_length},
        std::pair{"backend_waiting", &level.backend_waiting},
        std::pair{"p95_ttft_ms", &level.p95_ttft_ms}, std::pair{"p95_tpot_ms", &level.p95_tpot_ms},
        std::pair{"error_rate", &level.error_rate}}) {
    if (!node[key]) continue;
    PAGODA_ASSIGN_OR_RETURN(double v, get_positive_double(node[key], path + "." + key));
    *field = v;
  }
  if (level.error_rate && *level.error_rate > 1) {
    return invalid_argument("{}.error_rate: must be in (0, 1]", path);
  }
  if (node["cooldown_ms"]) {
    PAGODA_ASSIGN_OR_RETURN(uint64_t v,
                            get_uint(node["cooldown_ms"], path + ".cooldown_ms", 0, kMaxMs));
    level.cooldown_ms = static_cast<uint32_t>(v);
  }
  return Status();
}

Status parse_limit(const YAML::Node& node, const std::string& path, RateLimit& limit) {
  PAGODA_RETURN_IF_ERROR(
      check_keys(node, path, {"requests_per_minute", "tokens_per_minute", "tier"}));
  PAGODA_RETURN_IF_ERROR(
      read_u32(node, "requests_per_minute", path, limit.requests_per_minute, 0, 100000000));
  if (node["tokens_per_minute"]) {
    PAGODA_ASSIGN_OR_RETURN(
        limit.tokens_per_minute,
        get_uint(node["tokens_per_minute"], path + ".tokens_per_minute", 0, uint64_t{1} << 40));
  }
  return read_u32(node, "tier", path, limit.tier, 0, 100);
}

Status parse_rate_limits(const YAML::Node& node, LadderConfig& c) {
  const std::string path = "ladder.rate_limits";
  PAGODA_RETURN_IF_ERROR(check_keys(node, path, {"default", "keys"}));
  c.rate_limits_enabled = true;
  if (node["default"]) {
    PAGODA_RETURN_IF_ERROR(parse_limit(node["default"], path + ".default", c.default_limit));
  }
  if (const YAML::Node keys = node["keys"]) {
    if (!keys.IsMap()) return invalid_argument("{}.keys: must be a mapping of key: limit", path);
    if (keys.size() > kMaxKeys)
      return invalid_argument("{}.keys: more than {} keys", path, kMaxKeys);
    for (const auto& kv : keys) {
      PAGODA_ASSIGN_OR_RETURN(std::string key, get_name(kv.first, path + ".keys"));
      // The key itself is a secret: errors name its position, never its text.
      std::string where = fmt::format("{}.keys[{}]", path, c.key_limits.size());
      RateLimit limit = c.default_limit;
      PAGODA_RETURN_IF_ERROR(parse_limit(kv.second, where, limit));
      if (!c.key_limits.emplace(std::move(key), limit).second) {
        return invalid_argument("{}: duplicate key", where);
      }
    }
  }
  return Status();
}

}  // namespace

const RateLimit& LadderConfig::limit_for(const std::string& api_key) const {
  auto it = key_limits.find(api_key);
  return it == key_limits.end() ? default_limit : it->second;
}

Status parse_ladder_config(const YAML::Node& node, const std::set<std::string>& served,
                           LadderConfig& c) {
  const std::string p = "ladder";
  PAGODA_RETURN_IF_ERROR(check_keys(
      node, p,
      {"eval_interval_ms", "window_ms", "min_samples", "cooldown_ms", "clear_ratio", "levels",
       "rate_limits", "queue", "max_tokens_cap", "route", "disable", "cache", "circuit"}));
  c.enabled = true;
  PAGODA_RETURN_IF_ERROR(read_u32(node, "eval_interval_ms", p, c.eval_interval_ms, 10, 60000));
  PAGODA_RETURN_IF_ERROR(read_u32(node, "window_ms", p, c.window_ms, 100, 3600000));
  PAGODA_RETURN_IF_ERROR(read_u32(node, "min_samples", p, c.min_samples, 1, 100000));
  PAGODA_RETURN_IF_ERROR(read_u32(node, "cooldown_ms", p, c.cooldown_ms, 0, kMaxMs));
  if (node["clear_ratio"]) {
    PAGODA_ASSIGN_OR_RETURN(c.clear_ratio,
                            get_positive_double(node["clear_ratio"], p + ".clear_ratio"));
    if (c.clear_ratio > 1) return invalid_argument("{}.clear_ratio: must be in (0, 1]", p);
  }
  const YAML::Node levels = node["levels"];
  if (!levels || !levels.IsSequence() || levels.size() == 0 ||
      levels.size() > static_cast<size_t>(kMaxLadderLevel)) {
    return invalid_argument("{}.levels: must be a list of 1 to {} levels (level 1 first)", p,
                            kMaxLadderLevel);
  }
  for (size_t i = 0; i < levels.size(); ++i) {
    LadderLevel level;
    PAGODA_RETURN_IF_ERROR(parse_level(levels[i], fmt::format("{}.levels[{}]", p, i), level));
    c.levels.push_back(level);
  }
  if (node["rate_limits"]) PAGODA_RETURN_IF_ERROR(parse_rate_limits(node["rate_limits"], c));
  if (const YAML::Node q = node["queue"]) {
    PAGODA_RETURN_IF_ERROR(
        check_keys(q, p + ".queue", {"max_concurrent", "max_queued", "timeout_ms"}));
    PAGODA_RETURN_IF_ERROR(
        read_u32(q, "max_concurrent", p + ".queue", c.queue.max_concurrent, 1, 1000000));
    PAGODA_RETURN_IF_ERROR(read_u32(q, "max_queued", p + ".queue", c.queue.max_queued, 0, 1000000));
    PAGODA_RETURN_IF_ERROR(read_u32(q, "timeout_ms", p + ".queue", c.queue.timeout_ms, 1, 3600000));
    if (!q["max_concurrent"]) return invalid_argument("{}.queue.max_concurrent: missing", p);
  }
  if (node["max_tokens_cap"]) {
    PAGODA_ASSIGN_OR_RETURN(uint64_t cap,
                            get_uint(node["max_tokens_cap"], p + ".max_tokens_cap", 1, 1u << 24));
    c.max_tokens_cap = static_cast<uint32_t>(cap);
  }
  if (const YAML::Node route = node["route"]) {
    if (!route.IsMap()) return invalid_argument("{}.route: must be a mapping of model: model", p);
    if (route.size() > kMaxRoutes) {
      return invalid_argument("{}.route: more than {} entries", p, kMaxRoutes);
    }
    for (const auto& kv : route) {
      PAGODA_ASSIGN_OR_RETURN(std::string from, get_name(kv.first, p + ".route"));
      std::string where = p + ".route." + from;
      PAGODA_ASSIGN_OR_RETURN(std::string to, get_name(kv.second, where));
      if (!served.count(from)) {
        return invalid_argument("{}: model '{}' is not served by any backend", where, from);
      }
      if (!served.count(to)) {
        return invalid_argument("{}: model '{}' is not served by any backend", where, to);
      }
      if (!c.route.emplace(from, to).second) return invalid_argument("{}: duplicate", where);
    }
  }
  if (const YAML::Node d = node["disable"]) {
    if (!d.IsSequence()) return invalid_argument("{}.disable: must be a list of field names", p);
    for (size_t i = 0; i < d.size(); ++i) {
      std::string where = fmt::format("{}.disable[{}]", p, i);
      PAGODA_ASSIGN_OR_RETURN(std::string f, get_name(d[i], where));
      if (std::find(std::begin(kDisableable), std::end(kDisableable), f) ==
          std::end(kDisableable)) {
        return invalid_argument(
            "{}: '{}' cannot be disabled (one of n, best_of, logprobs, top_logprobs, tools, "
            "stream, echo, response_format, prompt_logprobs)",
            where, f);
      }
      if (std::find(c.disable.begin(), c.disable.end(), f) != c.disable.end()) {
        return invalid_argument("{}: '{}' is listed twice", where, f);
      }
      c.disable.push_back(std::move(f));
    }
  }
  if (const YAML::Node cache = node["cache"]) {
    const std::string w = p + ".cache";
    PAGODA_RETURN_IF_ERROR(
        check_keys(cache, w, {"max_entries", "max_bytes", "ttl_ms", "max_entry_bytes"}));
    if (!cache["max_entries"]) return invalid_argument("{}.max_entries: missing", w);
    PAGODA_RETURN_IF_ERROR(read_u32(cache, "max_entries", w, c.cache.max_entries, 1, 10000000));
    if (cache["max_bytes"]) {
      PAGODA_ASSIGN_OR_RETURN(c.cache.max_bytes,
                              get_uint(cache["max_bytes"], w + ".max_bytes", 1, uint64_t{1} << 40));
    }
    PAGODA_RETURN_IF_ERROR(read_u32(cache, "ttl_ms", w, c.cache.ttl_ms, 1, kMaxMs));
    PAGODA_RETURN_IF_ERROR(
        read_u32(cache, "max_entry_bytes", w, c.cache.max_entry_bytes, 1, 1u << 30));
  }
  if (const YAML::Node circuit = node["circuit"]) {
    const std::string w = p + ".circuit";
    PAGODA_RETURN_IF_ERROR(check_keys(circuit, w, {"retry_after_s", "preset_reply"}));
    PAGODA_RETURN_IF_ERROR(
        read_u32(circuit, "retry_after_s", w, c.circuit.retry_after_s, 1, 86400));
    if (circuit["preset_reply"]) {
      PAGODA_ASSIGN_OR_RETURN(c.circuit.preset_reply,
                              get_string(circuit["preset_reply"], w + ".preset_reply"));
    }
  }
  return Status();
}

}  // namespace pagoda::router
