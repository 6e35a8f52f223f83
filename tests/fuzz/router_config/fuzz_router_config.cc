// libFuzzer target: the router's readers of outside text. The first byte picks one: the YAML
// config parser (parse_router_config), the backend /metrics readers (parse_backend_load,
// sum_metric) or the prefix-affinity key of a JSON request body (affinity_key, prefix length from
// the same byte) and the ladder's rewrites of the same body (cache_key, clamp_max_tokens,
// refuse_disabled, preset_reply). The YAML branch covers the `ladder:` section
// (router/ladder_config.cc). Every outcome must be a Result/value (no crash, throw, hang or
// sanitizer report); an accepted config must satisfy the invariants the router relies on.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "router/backend_load.h"
#include "router/ladder_actions.h"
#include "router/prefix_affinity.h"
#include "router/response_cache.h"
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
    if (body.is_discarded()) return 0;
    (void)affinity_key(body, data[0] >> 2);
    (void)cache_key("/v1/chat/completions", "k", "m", body);
    (void)requested_max_tokens(body);
    if (body.is_object()) {
      if (auto e = refuse_disabled(body,
                                   {"n", "best_of", "logprobs", "top_logprobs", "tools", "stream",
                                    "echo", "response_format", "prompt_logprobs"},
                                   1)) {
        check(e->status == 503 && !e->param.empty());
      }
      const uint32_t cap = 1u + (data[0] >> 2);
      clamp_max_tokens(body, "/v1/chat/completions", cap);
      for (const char* f : {"max_tokens", "max_completion_tokens", "max_output_tokens"}) {
        auto it = body.find(f);
        if (it != body.end() && it->is_number()) check(it->get<double>() <= cap);
      }
    }
    if (auto m = body.find("model"); m != body.end() && m->is_string()) {
      auto reply = preset_reply("/v1/chat/completions", m->get<std::string>(), body.dump(), true);
      check(reply && reply->body.ends_with("data: [DONE]\n\n"));
    }
    return 0;
  }
  if (data[0] & 1) {
    BackendLoad load = parse_backend_load(text);
    if (load.num_waiting) check(std::isfinite(*load.num_waiting) && *load.num_waiting >= 0);
    if (load.kv_usage) check(*load.kv_usage >= 0 && *load.kv_usage <= 1);
    // bench serve's reader of the same text (a sum of finite samples: never NaN).
    const auto drafts = sum_metric(text, "vllm:spec_decode_num_drafts_total");
    if (drafts) check(!std::isnan(*drafts));
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
  const LadderConfig& l = config->ladder;
  if (l.enabled) {
    check(!l.levels.empty() && l.levels.size() <= static_cast<size_t>(kMaxLadderLevel));
    check(l.clear_ratio > 0 && l.clear_ratio <= 1);
    for (const LadderLevel& level : l.levels)
      check(!level.error_rate || (*level.error_rate > 0 && *level.error_rate <= 1));
    for (const auto& [from, to] : l.route) {
      bool served = false;
      for (const BackendConfig& b : config->backends)
        served = served || std::find(b.models.begin(), b.models.end(), to) != b.models.end();
      check(served);
    }
  }
  return 0;
}
