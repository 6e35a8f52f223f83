#include "router/router_config.h"

#include "router/config_fields.h"
#include "router/ladder_config.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <fmt/format.h>

namespace pagoda::router {

namespace {

constexpr size_t kMaxConfigBytes = 1u << 20;
// yaml-cpp parses flow collections recursively: a deep "[[[[..." would exhaust the stack before
// any of our checks run, so nesting is bounded on the raw text first.
constexpr int kMaxFlowDepth = 32;
constexpr size_t kMaxLinePrefix = 128;
constexpr size_t kMaxBackends = 1024;
constexpr size_t kMaxModelsPerBackend = 256;
constexpr size_t kMaxAliases = 4096;

Status parse_backend(const YAML::Node& node, const std::string& path, BackendConfig& b) {
  PAGODA_RETURN_IF_ERROR(check_keys(node, path, {"name", "url", "models", "weight", "api_key"}));
  if (!node["url"]) return invalid_argument("{}.url: missing", path);
  PAGODA_ASSIGN_OR_RETURN(b.url_text, get_string(node["url"], path + ".url"));
  PAGODA_ASSIGN_OR_RETURN(b.url, parse_upstream_url(b.url_text, path + ".url"));
  if (node["name"]) {
    PAGODA_ASSIGN_OR_RETURN(b.name, get_name(node["name"], path + ".name"));
  } else {
    b.name = b.url.authority();
  }
  const YAML::Node models = node["models"];
  if (!models || !models.IsSequence() || models.size() == 0) {
    return invalid_argument("{}.models: must be a non-empty list of model names", path);
  }
  if (models.size() > kMaxModelsPerBackend) {
    return invalid_argument("{}.models: more than {} models", path, kMaxModelsPerBackend);
  }
  for (size_t i = 0; i < models.size(); ++i) {
    PAGODA_ASSIGN_OR_RETURN(std::string m,
                            get_name(models[i], fmt::format("{}.models[{}]", path, i)));
    b.models.push_back(std::move(m));
  }
  if (node["weight"]) {
    PAGODA_ASSIGN_OR_RETURN(b.weight, get_positive_double(node["weight"], path + ".weight"));
  }
  if (node["api_key"]) {
    PAGODA_ASSIGN_OR_RETURN(b.api_key, get_name(node["api_key"], path + ".api_key"));
  }
  return Status();
}

Status parse_root(const YAML::Node& root, RouterConfig& c) {
  PAGODA_RETURN_IF_ERROR(check_keys(
      root, "",
      {"listen", "backends", "aliases", "fallback", "health", "limits", "balancing", "ladder"}));
  if (const YAML::Node listen = root["listen"]) {
    PAGODA_RETURN_IF_ERROR(check_keys(listen, "listen", {"host", "port"}));
    if (listen["host"]) {
      PAGODA_ASSIGN_OR_RETURN(c.host, get_name(listen["host"], "listen.host"));
    }
    if (listen["port"]) {
      PAGODA_ASSIGN_OR_RETURN(uint64_t port, get_uint(listen["port"], "listen.port", 0, 65535));
      c.port = static_cast<uint16_t>(port);
    }
  }
  const YAML::Node backends = root["backends"];
  if (!backends || !backends.IsSequence() || backends.size() == 0) {
    return invalid_argument("backends: must be a non-empty list");
  }
  if (backends.size() > kMaxBackends) {
    return invalid_argument("backends: more than {} entries", kMaxBackends);
  }
  std::set<std::string> names;
  std::set<std::string> served;
  for (size_t i = 0; i < backends.size(); ++i) {
    std::string path = fmt::format("backends[{}]", i);
    BackendConfig b;
    PAGODA_RETURN_IF_ERROR(parse_backend(backends[i], path, b));
    if (!names.insert(b.name).second) {
      return invalid_argument("{}.name: '{}' is used by another backend", path, b.name);
    }
    served.insert(b.models.begin(), b.models.end());
    c.backends.push_back(std::move(b));
  }
  if (const YAML::Node aliases = root["aliases"]) {
    if (!aliases.IsMap()) return invalid_argument("aliases: must be a mapping of alias: model");
    if (aliases.size() > kMaxAliases) {
      return invalid_argument("aliases: more than {} entries", kMaxAliases);
    }
    for (const auto& kv : aliases) {
      PAGODA_ASSIGN_OR_RETURN(std::string alias, get_name(kv.first, "aliases"));
      std::string path = "aliases." + alias;
      PAGODA_ASSIGN_OR_RETURN(std::string target, get_name(kv.second, path));
      if (served.count(alias)) {
        return invalid_argument("{}: '{}' is already a served model name", path, alias);
      }
      if (!served.count(target)) {
        return invalid_argument("{}: model '{}' is not served by any backend", path, target);
      }
      if (!c.aliases.emplace(alias, target).second) {
        return invalid_argument("{}: duplicate alias", path);
      }
    }
  }
  if (const YAML::Node fb = root["fallback"]) {
    PAGODA_RETURN_IF_ERROR(check_keys(fb, "fallback", {"url", "api_key", "model"}));
    FallbackConfig f;
    if (!fb["url"]) return invalid_argument("fallback.url: missing");
    PAGODA_ASSIGN_OR_RETURN(f.url_text, get_string(fb["url"], "fallback.url"));
    PAGODA_ASSIGN_OR_RETURN(f.url, parse_upstream_url(f.url_text, "fallback.url"));
    if (fb["api_key"]) {
      PAGODA_ASSIGN_OR_RETURN(f.api_key, get_name(fb["api_key"], "fallback.api_key"));
    }
    if (fb["model"]) {
      PAGODA_ASSIGN_OR_RETURN(f.model, get_name(fb["model"], "fallback.model"));
    }
    c.fallback = std::move(f);
  }
  if (const YAML::Node h = root["health"]) {
    PAGODA_RETURN_IF_ERROR(check_keys(
        h, "health", {"interval_ms", "timeout_ms", "max_backoff_ms", "failures_to_eject"}));
    auto u32 = [&](const char* key, uint32_t& out, uint64_t min, uint64_t max) -> Status {
      if (!h[key]) return Status();
      PAGODA_ASSIGN_OR_RETURN(uint64_t v, get_uint(h[key], std::string("health.") + key, min, max));
      out = static_cast<uint32_t>(v);
      return Status();
    };
    PAGODA_RETURN_IF_ERROR(u32("interval_ms", c.health.interval_ms, 10, 3600000));
    PAGODA_RETURN_IF_ERROR(u32("timeout_ms", c.health.timeout_ms, 10, 600000));
    PAGODA_RETURN_IF_ERROR(u32("max_backoff_ms", c.health.max_backoff_ms, 10, 3600000));
    PAGODA_RETURN_IF_ERROR(u32("failures_to_eject", c.health.failures_to_eject, 1, 1000));
    if (c.health.max_backoff_ms < c.health.interval_ms) {
      return invalid_argument("health.max_backoff_ms: must be >= health.interval_ms");
    }
  }
  if (const YAML::Node l = root["limits"]) {
    PAGODA_RETURN_IF_ERROR(check_keys(
        l, "limits",
        {"max_attempts", "connect_timeout_ms", "stream_idle_timeout_ms", "max_body_bytes"}));
    auto u32 = [&](const char* key, uint32_t& out, uint64_t min, uint64_t max) -> Status {
      if (!l[key]) return Status();
      PAGODA_ASSIGN_OR_RETURN(uint64_t v, get_uint(l[key], std::string("limits.") + key, min, max));
      out = static_cast<uint32_t>(v);
      return Status();
    };
    PAGODA_RETURN_IF_ERROR(u32("max_attempts", c.limits.max_attempts, 1, 16));
    PAGODA_RETURN_IF_ERROR(u32("connect_timeout_ms", c.limits.connect_timeout_ms, 10, 600000));
    PAGODA_RETURN_IF_ERROR(
        u32("stream_idle_timeout_ms", c.limits.stream_idle_timeout_ms, 100, 86400000));
    if (l["max_body_bytes"]) {
      PAGODA_ASSIGN_OR_RETURN(c.limits.max_body_bytes,
                              get_uint(l["max_body_bytes"], "limits.max_body_bytes", 1, 1u << 30));
    }
  }
  if (const YAML::Node bal = root["balancing"]) {
    PAGODA_RETURN_IF_ERROR(
        check_keys(bal, "balancing", {"prefix_affinity", "prefix_chars", "load_factor"}));
    if (const YAML::Node on = bal["prefix_affinity"]) {
      PAGODA_ASSIGN_OR_RETURN(c.balancing.prefix_affinity,
                              get_bool(on, "balancing.prefix_affinity"));
    }
    if (bal["prefix_chars"]) {
      PAGODA_ASSIGN_OR_RETURN(uint64_t n,
                              get_uint(bal["prefix_chars"], "balancing.prefix_chars", 1, 1u << 20));
      c.balancing.prefix_chars = static_cast<uint32_t>(n);
    }
    if (bal["load_factor"]) {
      PAGODA_ASSIGN_OR_RETURN(c.balancing.load_factor,
                              get_positive_double(bal["load_factor"], "balancing.load_factor"));
      if (c.balancing.load_factor < 1.0) {
        return invalid_argument("balancing.load_factor: must be >= 1");
      }
    }
  }
  if (const YAML::Node ladder = root["ladder"]) {
    PAGODA_RETURN_IF_ERROR(parse_ladder_config(ladder, served, c.ladder));
  }
  return Status();
}

}  // namespace

std::string UpstreamUrl::authority() const {
  return fmt::format("{}:{}", host, port);
}

Result<UpstreamUrl> parse_upstream_url(std::string_view text, std::string_view key) {
  constexpr std::string_view kScheme = "http://";
  if (text.substr(0, 8) == "https://") {
    return invalid_argument("{}: https is not supported (the router speaks plain http)", key);
  }
  if (text.substr(0, kScheme.size()) != kScheme) {
    return invalid_argument("{}: must start with http://", key);
  }
  std::string_view rest = text.substr(kScheme.size());
  for (char ch : rest) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '@' || c == '\\') {
      return invalid_argument("{}: invalid character in URL (no user info, query or fragment)",
                              key);
    }
  }
  size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
  while (!path.empty() && path.back() == '/')
    path.remove_suffix(1);
  UpstreamUrl u;
  std::string_view host = authority;
  size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && authority.find(']') == std::string_view::npos) {
    host = authority.substr(0, colon);
    std::string_view port = authority.substr(colon + 1);
    uint32_t p = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
    if (port.empty() || ec != std::errc() || end != port.data() + port.size() || p == 0 ||
        p > 65535) {
      return invalid_argument("{}: invalid port", key);
    }
    u.port = static_cast<uint16_t>(p);
  }
  if (host.empty()) return invalid_argument("{}: missing host", key);
  if (host.find(':') != std::string_view::npos || host.find('[') != std::string_view::npos) {
    return invalid_argument("{}: IPv6 literals are not supported", key);
  }
  u.host = std::string(host);
  u.path_prefix = std::string(path);
  return u;
}

std::string upstream_path(const UpstreamUrl& url, std::string_view client_target) {
  std::string_view target = client_target;
  std::string_view prefix = url.path_prefix;
  if (prefix.ends_with("/v1") && (target.starts_with("/v1/") || target == "/v1")) {
    target.remove_prefix(3);
  }
  std::string out(prefix);
  out += target;
  if (out.empty()) out = "/";
  return out;
}

const std::string& RouterConfig::resolve(const std::string& model) const {
  auto it = aliases.find(model);
  return it == aliases.end() ? model : it->second;
}

Result<RouterConfig> parse_router_config(std::string_view yaml) {
  if (yaml.size() > kMaxConfigBytes) {
    return invalid_argument("config: larger than {} bytes", kMaxConfigBytes);
  }
  // Block collections nest by indentation and "- - -" prefixes, recursively as well: a line's
  // leading run of spaces and dashes is bounded instead.
  size_t line_prefix = 0;
  bool in_prefix = true;
  for (char c : yaml) {
    if (c == '\n') {
      line_prefix = 0;
      in_prefix = true;
    } else if (in_prefix && (c == ' ' || c == '-' || c == '?' || c == ':')) {
      if (++line_prefix > kMaxLinePrefix) {
        return invalid_argument("config: a line is indented or nested deeper than {} columns",
                                kMaxLinePrefix);
      }
    } else {
      in_prefix = false;
    }
  }
  int depth = 0;
  for (char c : yaml) {
    if (c == '[' || c == '{') {
      if (++depth > kMaxFlowDepth) {
        return invalid_argument("config: brackets nested deeper than {}", kMaxFlowDepth);
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  RouterConfig c;
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    PAGODA_RETURN_IF_ERROR(parse_root(root, c));
  } catch (const YAML::Exception& e) {
    return invalid_argument("config: YAML error at line {} column {}: {}", e.mark.line + 1,
                            e.mark.column + 1, e.msg);
  } catch (const std::exception& e) {
    return invalid_argument("config: {}", e.what());
  }
  return c;
}

Result<RouterConfig> load_router_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open config file '{}'", path);
  std::string text;
  text.resize(kMaxConfigBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  auto r = parse_router_config(text);
  if (!r.ok()) return Status(r.status().code(), path + ": " + r.status().message());
  return r;
}

}  // namespace pagoda::router
