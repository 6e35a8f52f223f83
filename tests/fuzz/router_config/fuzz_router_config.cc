// libFuzzer target: the router's readers of outside text. The first byte picks one: the YAML
// config parser (parse_router_config), the backend /metrics reader (parse_backend_load) or the
// prefix-affinity key of a JSON request body (affinity_key, prefix length from the same byte).
// Every outcome must be a Result/value (no crash, throw, hang or sanitizer report); an accepted
// config must satisfy the invariants the router relies on.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "router/backend_load.h"
#include "router/prefix_affinity.h"
#include "router/router_config.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::router;
  if (size == 0 || size > 16384) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 2) {  // a request body through the prefix-affinity key
    auto body = nlohmann::json::parse(text, nullptr, false);
    if (!body.is_discarded()) (void)affinity_key(body, data[0] >> 2);
    return 0;
  }
  if (data[0] & 1) {
    BackendLoad load = parse_backend_load(text);
    if (load.num_waiting) check(std::isfinite(*load.num_waiting) && *load.num_waiting >= 0);
    if (load.kv_usage) check(*load.kv_usage >= 0 && *load.kv_usage <= 1);
    return 0;
  }
  auto config = parse_router_config(text);
  if (!config.ok()) {
    check(!config.status().message().empty());
    return 0;
  }
  check(!config->backends.empty());
  for (const BackendConfig& b : config->backends) {
    check(!b.models.empty() && b.weight > 0 && !b.url.host.empty() && b.url.port > 0);
  }
  for (const auto& [alias, target] : config->aliases)
    check(config->resolve(alias) == target);
  check(config->limits.max_attempts >= 1);
  return 0;
}
