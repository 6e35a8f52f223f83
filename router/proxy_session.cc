#include "router/proxy_session.h"

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <nlohmann/json.hpp>

#include "http/api_error.h"
#include "http/http_framing.h"
#include "router/ladder_actions.h"
#include "router/prefix_affinity.h"
#include "router/sse_relay.h"
#include "router/upstream_client.h"

namespace pagoda::router {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using json = nlohmann::json;
using std::chrono::milliseconds;

namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr uint32_t kMaxHeaderBytes = 16 * 1024;
constexpr auto kIdleKeepAlive = std::chrono::seconds(120);
constexpr auto kClientWriteTimeout = std::chrono::seconds(60);
constexpr auto kQueuePoll = std::chrono::milliseconds(5);
using SteadyClock = std::chrono::steady_clock;

struct ActiveRequest {
  explicit ActiveRequest(RouterState& s) : state(s) { ++state.active_requests; }
  ~ActiveRequest() { --state.active_requests; }
  ActiveRequest(const ActiveRequest&) = delete;
  ActiveRequest& operator=(const ActiveRequest&) = delete;
  RouterState& state;
};

// How relaying one upstream response ended.
enum class RelayEnd { kComplete, kCut, kClientGone };

// What relay() measures and keeps for the ladder.
struct RelayOptions {
  SteadyClock::time_point sent;          // when the request went upstream (TTFT origin)
  std::optional<std::string> cache_key;  // store a complete 200 JSON answer under this key
};

// Releases a request's slot in the admission queue when it ends, however it ends.
struct QueueSlot {
  explicit QueueSlot(AdmissionQueue& q) : queue(q) {}
  ~QueueSlot() {
    if (held) queue.release();
  }
  QueueSlot(const QueueSlot&) = delete;
  QueueSlot& operator=(const QueueSlot&) = delete;
  AdmissionQueue& queue;
  bool held = false;
};

// The API key a request presents (Bearer token or x-api-key), "" if none.
std::string api_key_of(const bhttp::request<bhttp::string_body>& req) {
  std::string_view auth(req[bhttp::field::authorization].data(),
                        req[bhttp::field::authorization].size());
  if (auth.size() > 7 && http::ascii_lower(std::string(auth.substr(0, 7))) == "bearer ") {
    return std::string(auth.substr(7));
  }
  auto x = req.find("x-api-key");
  return x == req.end() ? std::string() : std::string(x->value());
}

class Connection {
 public:
  Connection(asio::ip::tcp::socket socket, RouterState& state)
      : client_(std::move(socket)), state_(state) {}

  asio::awaitable<void> run();

 private:
  asio::awaitable<bool> write(std::string data);
  asio::awaitable<bool> respond(int status, std::string_view content_type, std::string_view body,
                                const std::vector<std::pair<std::string, std::string>>& extra);
  asio::awaitable<bool> respond_error(const http::ApiError& e);
  // A router-level failure: the error response and its counts.
  asio::awaitable<void> fail(const http::ApiError& e, ErrorCause cause);
  // The ladder's level-1 to level-5 checks before a request goes upstream. Returns false if the
  // request was answered here (refused, cached or preset); may rewrite `body` / `served`.
  asio::awaitable<bool> degrade(const bhttp::request<bhttp::string_body>& req,
                                const std::string& path, nlohmann::json& body, std::string& served,
                                bool& body_changed, std::optional<std::string>& cache_key,
                                QueueSlot& slot);

  asio::awaitable<void> handle(const bhttp::request<bhttp::string_body>& req);
  asio::awaitable<void> proxy(const bhttp::request<bhttp::string_body>& req);
  // `upstream_done` runs once, as soon as the upstream response is complete or broken (before
  // the last bytes reach the client), so the backend's outstanding count drops with its work.
  asio::awaitable<RelayEnd> relay(UpstreamExchange& ex, const std::string& backend_name,
                                  const std::string& path, int num_choices,
                                  const std::function<void()>& upstream_done,
                                  const RelayOptions& options);

  std::string models_json() const;
  std::string degradation_header() const { return std::to_string(state_.degradation().level()); }
  std::string health_json(bool& ok) const;

  beast::tcp_stream client_;
  RouterState& state_;
  beast::flat_buffer buffer_;
  bool keep_alive_ = true;
  bool http10_ = false;
  bool head_only_ = false;
  // The shape of this request's errors: Anthropic's on /v1/messages*, as `pagoda serve` answers.
  http::ErrorShape error_shape_ = http::ErrorShape::kOpenAI;
};

asio::awaitable<bool> Connection::write(std::string data) {
  client_.expires_after(kClientWriteTimeout);
  auto [ec, n] = co_await asio::async_write(client_, asio::buffer(data), kTuple);
  (void)n;
  co_return !ec;
}

asio::awaitable<bool> Connection::respond(
    int status, std::string_view content_type, std::string_view body,
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
                                status, http::reason_phrase(status), content_type, body.size());
  for (const auto& [k, v] : extra)
    out += fmt::format("{}: {}\r\n", k, v);
  out += fmt::format("x-pagoda-degradation: {}\r\n", degradation_header());
  if (!keep_alive_) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head_only_) out += body;
  co_return co_await write(std::move(out));
}

asio::awaitable<bool> Connection::respond_error(const http::ApiError& e) {
  std::vector<std::pair<std::string, std::string>> extra;
  if (e.retry_after_seconds > 0)
    extra.emplace_back("Retry-After", std::to_string(e.retry_after_seconds));
  co_return co_await respond(e.status, "application/json", e.body(error_shape_), extra);
}

asio::awaitable<void> Connection::fail(const http::ApiError& e, ErrorCause cause) {
  state_.metrics().count_error(cause);
  if (cause == ErrorCause::kNoBackend || cause == ErrorCause::kAttemptsExhausted) {
    // Failures of the service (not refusals of the client or the ladder) feed the error rate.
    state_.degradation().window().add(SteadyClock::now(), std::nullopt, std::nullopt, true);
  }
  bool sent = co_await respond_error(e);
  if (!sent) state_.metrics().count_error(ErrorCause::kClientDisconnect);
  state_.metrics().count_request("none", sent ? Outcome::kError : Outcome::kClientGone);
}

std::string Connection::models_json() const {
  auto cfg = state_.config();
  json data = json::array();
  std::vector<std::string> seen;
  auto add = [&](const std::string& id, const std::string& parent) {
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) return;
    seen.push_back(id);
    json m = {{"id", id}, {"object", "model"}, {"created", 0}, {"owned_by", "pagoda"}};
    if (!parent.empty()) m["parent"] = parent;
    data.push_back(std::move(m));
  };
  for (const BackendConfig& b : cfg->backends) {
    for (const std::string& m : b.models)
      add(m, "");
  }
  for (const auto& [alias, target] : cfg->aliases)
    add(alias, target);
  return json{{"object", "list"}, {"data", std::move(data)}}.dump(-1, ' ', false,
                                                                  json::error_handler_t::replace);
}

std::string Connection::health_json(bool& ok) const {
  auto views = state_.pool().snapshot();
  json backends = json::array();
  size_t admitted = 0;
  for (const auto& v : views) {
    admitted += v.admitted ? 1 : 0;
    backends.push_back({{"name", v.name},
                        {"status", v.admitted ? "up" : "ejected"},
                        {"outstanding", v.outstanding}});
  }
  bool fallback = state_.config()->fallback.has_value();
  ok = admitted > 0 || fallback;
  return json{{"status", ok ? "ok" : "unavailable"},
              {"backends_up", admitted},
              {"fallback", fallback},
              {"backends", std::move(backends)}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

asio::awaitable<void> Connection::run() {
  while (keep_alive_ && !state_.draining) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(kMaxHeaderBytes);
    parser.body_limit(state_.config()->limits.max_body_bytes);
    client_.expires_after(kIdleKeepAlive);
    auto [hec, hn] = co_await bhttp::async_read_header(client_, buffer_, parser, kTuple);
    (void)hn;
    error_shape_ = http::ErrorShape::kOpenAI;
    if (hec) {
      keep_alive_ = false;
      if (hec == bhttp::error::header_limit) {
        co_await fail(http::headers_too_large(kMaxHeaderBytes), ErrorCause::kInvalidRequest);
      } else if (hec != bhttp::error::end_of_stream && hec != beast::error::timeout &&
                 hec != asio::error::eof && hec != asio::error::connection_reset &&
                 hec != asio::error::operation_aborted && buffer_.size() > 0) {
        co_await fail(http::bad_request("malformed HTTP request: " + hec.message()),
                      ErrorCause::kInvalidRequest);
      }
      break;
    }
    {
      const std::string_view target(parser.get().target().data(), parser.get().target().size());
      error_shape_ = http::error_shape_for_path(target.substr(0, target.find('?')));
    }
    http10_ = parser.get().version() < 11;
    head_only_ = parser.get().method() == bhttp::verb::head;
    if (auto framing = http::check_framing(parser)) {
      keep_alive_ = false;
      co_await fail(*framing, ErrorCause::kInvalidRequest);
      break;
    }
    auto [bec, bn] = co_await bhttp::async_read(client_, buffer_, parser, kTuple);
    (void)bn;
    if (bec) {
      keep_alive_ = false;
      if (bec == bhttp::error::body_limit) {
        co_await fail(http::payload_too_large(state_.config()->limits.max_body_bytes),
                      ErrorCause::kInvalidRequest);
      }
      break;
    }
    keep_alive_ = parser.get().keep_alive();
    ActiveRequest active(state_);
    co_await handle(parser.get());
  }
  beast::error_code ec;
  client_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  client_.close();
}

asio::awaitable<void> Connection::handle(const bhttp::request<bhttp::string_body>& req) {
  std::string_view target(req.target().data(), req.target().size());
  std::string_view path = target.substr(0, target.find('?'));
  std::string method(req.method_string());
  bool get = req.method() == bhttp::verb::get || req.method() == bhttp::verb::head;
  if (path == "/health" || path == "/metrics" || path == "/v1/models") {
    if (!get) {
      co_await fail(http::method_not_allowed(method, std::string(path)),
                    ErrorCause::kInvalidRequest);
      co_return;
    }
    if (path == "/health") {
      bool ok = false;
      std::string body = health_json(ok);
      co_await respond(ok ? 200 : 503, "application/json", body, {});
    } else if (path == "/metrics") {
      Degradation& d = state_.degradation();
      std::string body = state_.metrics().render(state_.pool().snapshot(),
                                                 {d.queue().num_waiting(), d.queue().num_running(),
                                                  d.cache().num_entries(), d.cache().num_bytes()});
      co_await respond(200, "text/plain; version=0.0.4; charset=utf-8", body, {});
    } else {
      co_await respond(200, "application/json", models_json(), {});
    }
    co_return;
  }
  // /tokenize and /detokenize (vLLM's shape, with a model) pass through too: `bench serve` makes
  // its exact-length prompts with them, through the router as directly.
  const bool utility = path == "/tokenize" || path == "/detokenize";
  if (!path.starts_with("/v1/") && !utility) {
    co_await fail(http::route_not_found(method, std::string(path)), ErrorCause::kInvalidRequest);
    co_return;
  }
  if (req.method() != bhttp::verb::post) {
    co_await fail(http::method_not_allowed(method, std::string(path)), ErrorCause::kInvalidRequest);
    co_return;
  }
  co_await proxy(req);
}

int requested_choices(const json& body) {
  auto it = body.find("n");
  if (it == body.end() || !it->is_number_integer()) return 1;
  int64_t n = it->get<int64_t>();
  return n >= 1 && n <= 128 ? static_cast<int>(n) : 1;
}

asio::awaitable<bool> Connection::degrade(const bhttp::request<bhttp::string_body>& req,
                                          const std::string& path, json& body, std::string& served,
                                          bool& body_changed, std::optional<std::string>& cache_key,
                                          QueueSlot& slot) {
  auto cfg = state_.config();
  const LadderConfig& lc = cfg->ladder;
  Degradation& d = state_.degradation();
  RouterMetrics& metrics = state_.metrics();
  const int level = d.level();
  const auto now = SteadyClock::now();
  const std::string key = api_key_of(req);
  // The key is taken at every level (answers are stored as they pass) and on the request as
  // the client sent it: the level-2/3 rewrites below hold at level 4 too, where it is served.
  if (lc.cache.max_entries > 0) cache_key = router::cache_key(path, key, served, body);
  const int32_t retry_after = static_cast<int32_t>(std::max<uint32_t>(1, lc.cooldown_ms / 1000));

  if (level >= 5) {  // circuit breaker
    auto stream = body.find("stream");
    const bool streamed = stream != body.end() && stream->is_boolean() && stream->get<bool>();
    std::optional<PresetReply> reply;
    if (lc.circuit.preset_reply) {
      reply =
          preset_reply(path, body["model"].get<std::string>(), *lc.circuit.preset_reply, streamed);
    }
    if (reply) {
      metrics.count_ladder_action(LadderAction::kPreset);
      const std::vector<std::pair<std::string, std::string>> extra = {
          {std::string("x-pagoda-backend"), std::string("preset")}};
      bool sent = co_await respond(200, reply->content_type, reply->body, extra);
      metrics.count_request("preset", sent ? Outcome::kOk : Outcome::kClientGone);
      co_return false;
    }
    http::ApiError e = http::unavailable(
        "the service is overloaded and not taking requests (degradation level 5); retry later",
        static_cast<int32_t>(lc.circuit.retry_after_s));
    e.code = "circuit_open";
    co_await fail(e, ErrorCause::kCircuitOpen);
    co_return false;
  }
  if (level >= 4) {
    if (auto e = refuse_disabled(body, lc.disable, retry_after)) {
      co_await fail(*e, ErrorCause::kFeatureDisabled);
      co_return false;
    }
    if (cache_key) {
      auto hit = d.cache().get(*cache_key, now);
      metrics.count_cache_lookup(hit.has_value());
      if (hit) {
        metrics.count_ladder_action(LadderAction::kCacheHit);
        const std::vector<std::pair<std::string, std::string>> extra = {
            {std::string("x-pagoda-backend"), std::string("cache")},
            {std::string("x-pagoda-cache"), std::string("hit")}};
        bool sent = co_await respond(200, hit->content_type, hit->body, extra);
        metrics.count_request("cache", sent ? Outcome::kOk : Outcome::kClientGone);
        co_return false;
      }
    }
  }
  if (level >= 1 && lc.rate_limits_enabled) {
    const RateLimit& limit = lc.limit_for(key);
    auto decision = d.limiter().acquire(
        key, limit, estimate_tokens(req.body().size(), requested_max_tokens(body)), now);
    if (!decision.allowed) {
      http::ApiError e = http::too_many_requests(
          decision.tokens_exhausted
              ? fmt::format("rate limit reached for this API key: {} tokens per minute",
                            limit.tokens_per_minute)
              : fmt::format("rate limit reached for this API key: {} requests per minute",
                            limit.requests_per_minute),
          "rate_limit_exceeded", decision.retry_after_s);
      co_await fail(e, ErrorCause::kRateLimited);
      co_return false;
    }
  }
  if (level >= 2 && lc.max_tokens_cap && clamp_max_tokens(body, path, *lc.max_tokens_cap)) {
    body_changed = true;
    metrics.count_ladder_action(LadderAction::kClamped);
  }
  if (level >= 3) {
    if (auto it = lc.route.find(served); it != lc.route.end()) {
      served = it->second;
      body_changed = true;
      metrics.count_ladder_action(LadderAction::kRerouted);
    }
  }
  // Level 1's queue. Below it requests pass at once but count as running, so the cap holds from
  // the moment the ladder climbs.
  const bool bypass = level < 1 || lc.queue.max_concurrent == 0;
  auto ticket = d.queue().enqueue(lc.limit_for(key).tier, bypass, now);
  AdmissionQueue::State st = ticket.state;
  if (st == AdmissionQueue::State::kWaiting) {
    asio::steady_timer timer(client_.get_executor());
    while (st == AdmissionQueue::State::kWaiting) {
      timer.expires_after(kQueuePoll);
      co_await timer.async_wait(kTuple);
      st = d.queue().poll(ticket.id, SteadyClock::now());
    }
  }
  if (st == AdmissionQueue::State::kAdmitted) {
    slot.held = true;
    co_return true;
  }
  if (st == AdmissionQueue::State::kShed) {
    http::ApiError e = http::unavailable(
        "the router's queue is full of requests of this priority tier or higher; retry later",
        retry_after);
    e.code = "queue_full";
    co_await fail(e, ErrorCause::kQueueShed);
  } else {
    co_await fail(
        http::too_many_requests(fmt::format("waited longer than the router's queue timeout ({} ms)",
                                            lc.queue.timeout_ms),
                                "queue_timeout", retry_after),
        ErrorCause::kQueueTimeout);
  }
  co_return false;
}

asio::awaitable<void> Connection::proxy(const bhttp::request<bhttp::string_body>& req) {
  const std::string target(req.target());
  const std::string path = target.substr(0, target.find('?'));
  json body = json::parse(req.body(), nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    co_await fail(http::bad_request("the request body must be a JSON object"),
                  ErrorCause::kInvalidRequest);
    co_return;
  }
  auto model_it = body.find("model");
  if (model_it == body.end() || !model_it->is_string() ||
      model_it->get_ref<const std::string&>().empty()) {
    co_await fail(http::bad_request("'model' must be a non-empty string", "model"),
                  ErrorCause::kInvalidRequest);
    co_return;
  }
  const std::string model = model_it->get<std::string>();
  auto cfg = state_.config();
  std::string served = cfg->resolve(model);
  BackendPool& pool = state_.pool();
  RouterMetrics& metrics = state_.metrics();
  // The fallback stands in for replicas that are down, never for models we do not serve.
  if (!pool.serves(served)) {
    http::ApiError e =
        http::from_status(not_found("model '{}' is not served here", model), "model");
    e.code = "model_not_found";
    co_await fail(e, ErrorCause::kModelNotFound);
    co_return;
  }
  bool body_changed = false;
  std::optional<std::string> cache_key;
  QueueSlot slot(state_.degradation().queue());
  // The ladder governs the API, not the tokenizer utilities.
  if (path.starts_with("/v1/") &&
      !co_await degrade(req, path, body, served, body_changed, cache_key, slot)) {
    co_return;
  }
  std::string forwarded = req.body();
  if (served != model || body_changed) {
    body["model"] = served;
    forwarded = body.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  const int num_choices = requested_choices(body);

  const std::optional<uint64_t> affinity = affinity_key(body, cfg->balancing.prefix_chars);
  std::vector<const BackendPool::Backend*> tried;
  for (uint32_t attempt = 0; attempt < cfg->limits.max_attempts; ++attempt) {
    BackendPool::BackendPtr b = pool.acquire(served, tried, affinity);
    if (!b) break;
    tried.push_back(b.get());
    if (attempt > 0) metrics.count_retry();
    UpstreamExchange ex(client_.get_executor());
    const auto sent = SteadyClock::now();
    auto failure = co_await ex.open(b->config.url, req.method_string(), target, forwarded,
                                    b->config.api_key, milliseconds(cfg->limits.connect_timeout_ms),
                                    milliseconds(cfg->limits.stream_idle_timeout_ms));
    ErrorCause cause = ErrorCause::kUpstream5xx;
    bool failed = true;
    if (failure == UpstreamExchange::Failure::kConnect) {
      cause = ErrorCause::kUpstreamConnect;
    } else if (failure == UpstreamExchange::Failure::kTimeout) {
      cause = ErrorCause::kUpstreamTimeout;
    } else {
      failed = ex.status() >= 500;
    }
    if (failed) {
      ex.close();
      pool.release(*b);
      metrics.count_error(cause);
      if (pool.report_failure(*b, BackendPool::Clock::now()) == BackendPool::Transition::kEjected) {
        metrics.count_ejection(b->config.name);
      }
      continue;
    }
    pool.report_success(*b);
    bool released = false;
    auto release = [&] {
      if (!std::exchange(released, true)) pool.release(*b);
    };
    // A named local, not a braced temporary: GCC 12 destroys temporaries of a co_await
    // expression twice (a double free seen in the e2e test).
    const RelayOptions options{sent, cache_key};
    RelayEnd end = co_await relay(ex, b->config.name, path, num_choices, release, options);
    release();
    if (end == RelayEnd::kCut &&
        pool.report_failure(*b, BackendPool::Clock::now()) == BackendPool::Transition::kEjected) {
      metrics.count_ejection(b->config.name);
    }
    co_return;
  }

  if (cfg->fallback) {
    const FallbackConfig& fb = *cfg->fallback;
    if (!tried.empty()) metrics.count_retry();
    metrics.count_fallback();
    std::string fb_body = forwarded;
    if (!fb.model.empty()) {
      body["model"] = fb.model;
      fb_body = body.dump(-1, ' ', false, json::error_handler_t::replace);
    }
    UpstreamExchange ex(client_.get_executor());
    const auto sent = SteadyClock::now();
    auto failure = co_await ex.open(fb.url, req.method_string(), target, fb_body, fb.api_key,
                                    milliseconds(cfg->limits.connect_timeout_ms),
                                    milliseconds(cfg->limits.stream_idle_timeout_ms));
    if (failure == UpstreamExchange::Failure::kNone && ex.status() < 500) {
      const RelayOptions options{sent, std::nullopt};
      const std::function<void()> nothing = [] {};
      co_await relay(ex, "fallback", path, num_choices, nothing, options);
      co_return;
    }
    ex.close();
    metrics.count_error(failure == UpstreamExchange::Failure::kNone
                            ? ErrorCause::kUpstream5xx
                            : (failure == UpstreamExchange::Failure::kTimeout
                                   ? ErrorCause::kUpstreamTimeout
                                   : ErrorCause::kUpstreamConnect));
  }
  if (tried.empty() && !cfg->fallback) {  // every replica of the model is ejected
    co_await fail(http::unavailable(fmt::format("no healthy replica serves model '{}'", model), 1),
                  ErrorCause::kNoBackend);
  } else {
    http::ApiError e = http::unavailable(
        fmt::format("model '{}': {} replica attempt(s){} failed", model, tried.size(),
                    cfg->fallback ? " and the fallback upstream" : ""),
        1);
    e.status = 502;
    e.code = "upstream_failed";
    co_await fail(e, ErrorCause::kAttemptsExhausted);
  }
}

asio::awaitable<RelayEnd> Connection::relay(UpstreamExchange& ex, const std::string& backend_name,
                                            const std::string& path, int num_choices,
                                            const std::function<void()>& upstream_done,
                                            const RelayOptions& options) {
  RouterMetrics& metrics = state_.metrics();
  Degradation& degradation = state_.degradation();
  const auto idle = milliseconds(state_.config()->limits.stream_idle_timeout_ms);
  const std::string content_type = ex.header("Content-Type");
  const bool sse = http::ascii_lower(content_type).starts_with("text/event-stream");
  const std::optional<uint64_t> length = ex.content_length();
  const bool chunked = !http10_ && (sse || !length);
  if (http10_ && (sse || !length)) keep_alive_ = false;

  std::string head =
      fmt::format("HTTP/1.1 {} {}\r\n", ex.status(), http::reason_phrase(ex.status()));
  if (!content_type.empty()) head += fmt::format("Content-Type: {}\r\n", content_type);
  if (chunked) {
    head += "Transfer-Encoding: chunked\r\n";
  } else if (length) {
    head += fmt::format("Content-Length: {}\r\n", *length);
  }
  for (const char* name : {"Retry-After", "X-Request-Id"}) {
    std::string v = ex.header(name);
    if (!v.empty()) head += fmt::format("{}: {}\r\n", name, v);
  }
  if (sse) head += "Cache-Control: no-cache\r\n";
  head += fmt::format("x-pagoda-backend: {}\r\n", backend_name);
  head += fmt::format("x-pagoda-degradation: {}\r\n", degradation_header());
  // A complete 200 JSON answer of a cacheable request is kept as it passes (bounded by the
  // cache's entry size, known from Content-Length before the first byte).
  const bool capture = options.cache_key && ex.status() == 200 && !sse && length &&
                       *length <= state_.config()->ladder.cache.max_entry_bytes;
  std::string captured;
  std::optional<SteadyClock::time_point> first_byte;
  if (!keep_alive_) head += "Connection: close\r\n";
  head += "\r\n";

  auto frame = [&](std::string_view data) {
    if (!chunked) return std::string(data);
    return fmt::format("{:x}\r\n{}\r\n", data.size(), data);
  };
  auto client_gone = [&]() {
    ex.close();
    metrics.count_error(ErrorCause::kClientDisconnect);
    metrics.count_request(backend_name, Outcome::kClientGone);
    keep_alive_ = false;
    return RelayEnd::kClientGone;
  };

  if (!co_await write(std::move(head))) co_return client_gone();
  if (head_only_) {
    ex.close();
    metrics.count_request(backend_name, Outcome::kOk);
    co_return RelayEnd::kComplete;
  }
  SseRelay events;
  std::string piece;
  for (;;) {
    bool ok = co_await ex.read_some(piece, idle);
    if (!ok || ex.done()) upstream_done();
    if (!first_byte && !piece.empty()) first_byte = SteadyClock::now();
    if (capture) captured += piece;
    std::string out = sse ? events.push(piece) : std::move(piece);
    if (ok && ex.done() && sse) out += events.flush();
    if (!out.empty() && !co_await write(frame(out))) co_return client_gone();
    if (!ok) break;
    if (ex.done()) {
      if (chunked && !co_await write("0\r\n\r\n")) co_return client_gone();
      metrics.count_request(backend_name, Outcome::kOk);
      const auto now = SteadyClock::now();
      if (ex.status() == 200) {
        using Ms = std::chrono::duration<double, std::milli>;
        const auto first = first_byte.value_or(now);
        std::optional<double> tpot;
        if (sse && events.num_data_events() >= 2) {
          tpot = Ms(now - first).count() / static_cast<double>(events.num_data_events() - 1);
        }
        degradation.window().add(now, Ms(first - options.sent).count(), tpot, false);
      }
      if (capture && captured.size() == *length) {
        degradation.cache().put(*options.cache_key, {content_type, std::move(captured)}, now);
        metrics.count_cache_store();
      }
      co_return RelayEnd::kComplete;
    }
  }
  // The upstream broke mid-response.
  ex.close();
  degradation.window().add(SteadyClock::now(), std::nullopt, std::nullopt, true);
  metrics.count_error(ErrorCause::kStreamCut);
  metrics.count_request(backend_name, Outcome::kStreamCut);
  if (!sse || !chunked) {
    keep_alive_ = false;  // the client sees the connection end before the declared body does
    co_return RelayEnd::kCut;
  }
  std::string tail = events.error_events(
      path, num_choices, error_shape_,
      fmt::format("the upstream replica '{}' failed mid-stream; the response is incomplete",
                  backend_name));
  if (co_await write(frame(tail) + "0\r\n\r\n")) co_return RelayEnd::kCut;
  keep_alive_ = false;
  co_return RelayEnd::kCut;
}

}  // namespace

asio::awaitable<void> serve_connection(asio::ip::tcp::socket socket, RouterState& state) {
  Connection c(std::move(socket), state);
  co_await c.run();
}

}  // namespace pagoda::router
