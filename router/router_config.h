// RouterConfig: the gateway's YAML configuration (`pagoda router --config FILE`), parsed and
// validated in one pass. Every key is checked (unknown keys are refused, so a typo never goes
// silently unused) and every error names the key path ("backends[1].url: ..."). The file is
// read again on SIGHUP; a config that fails validation leaves the running one in place.
//
//   listen: {host: 127.0.0.1, port: 8080}
//   backends:
//     - name: a                     # optional, defaults to the URL's host:port
//       url: http://127.0.0.1:8001  # a `pagoda serve` replica (plain http)
//       models: [demo]
//       weight: 1                   # > 0; share of the load relative to the others
//       api_key: ...                # optional Bearer key sent to this backend
//   aliases: {gpt-4o-mini: demo}
//   fallback: {url: http://host:port/prefix, api_key: ..., model: ...}  # all but url optional
//   health: {interval_ms, timeout_ms, max_backoff_ms, failures_to_eject}
//   limits: {max_attempts, connect_timeout_ms, stream_idle_timeout_ms, max_body_bytes}
//   balancing: {prefix_affinity: true, prefix_chars: 2048, load_factor: 1.25}
//   ladder: {...}  # the degradation ladder, see router/ladder_config.h
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagoda/status.h"
#include "router/ladder_config.h"

namespace pagoda::router {

// An http:// URL split for a client: host, port and a path prefix ("" or "/v1-like/prefix",
// never ending in '/').
struct UpstreamUrl {
  std::string host;
  uint16_t port = 80;
  std::string path_prefix;

  std::string authority() const;  // "host:port"
};

// `text` as an http:// URL; https is refused (no TLS in the router yet), as are user info,
// queries and fragments. `key` names the field in the error.
Result<UpstreamUrl> parse_upstream_url(std::string_view text, std::string_view key);

// The upstream path for a client's path: the URL's prefix, without repeating a "/v1" that both
// end and begin with (a base URL as the OpenAI SDKs take it, "http://host/v1").
std::string upstream_path(const UpstreamUrl& url, std::string_view client_target);

struct BackendConfig {
  std::string name;
  std::string url_text;
  UpstreamUrl url;
  std::vector<std::string> models;
  double weight = 1.0;
  std::string api_key;  // "" = none
};

struct FallbackConfig {
  std::string url_text;
  UpstreamUrl url;
  std::string api_key;  // "" = none
  std::string model;    // "" = forward the client's model unchanged
};

struct HealthConfig {
  uint32_t interval_ms = 2000;      // active /health check period of a healthy backend
  uint32_t timeout_ms = 1000;       // per check
  uint32_t max_backoff_ms = 30000;  // ejected backends are probed at interval * 2^k, capped here
  uint32_t failures_to_eject = 1;   // consecutive passive failures (connect error, 5xx) to eject
};

struct LimitsConfig {
  uint32_t max_attempts = 3;  // replicas tried for a request that has not streamed a byte
  uint32_t connect_timeout_ms = 2000;
  uint32_t stream_idle_timeout_ms = 300000;  // no upstream byte for this long cuts a response
  uint64_t max_body_bytes = 8u << 20;
};

struct BalancingConfig {
  bool prefix_affinity = true;
  uint32_t prefix_chars = 2048;  // characters of the prompt / chat prefix hashed
  double load_factor = 1.25;     // bounded load: a replica takes at most this times the mean
};

struct RouterConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::vector<BackendConfig> backends;
  std::map<std::string, std::string> aliases;  // alias -> served model name
  std::optional<FallbackConfig> fallback;
  HealthConfig health;
  LimitsConfig limits;
  BalancingConfig balancing;
  LadderConfig ladder;  // the degradation ladder (router/ladder_config.h)

  // The served model an alias (or a model name) stands for.
  const std::string& resolve(const std::string& model) const;
};

// Parses and validates YAML text. Never throws; errors name the key.
Result<RouterConfig> parse_router_config(std::string_view yaml);
// Reads `path` (at most 1 MiB) and parses it.
Result<RouterConfig> load_router_config(const std::string& path);

}  // namespace pagoda::router
