#include "server/router.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <initializer_list>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/post.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/anthropic_messages.h"
#include "server/embedding_job.h"
#include "server/generation_job.h"
#include "server/http_framing.h"
#include "server/http_responses.h"
#include "server/http_session.h"
#include "server/lora_routes.h"
#include "server/openai_request.h"
#include "server/openai_rerank.h"
#include "server/openai_responses.h"
#include "server/server_state.h"
#include "server/web_assets.h"

namespace pagoda::server {

using nlohmann::json;

namespace {

constexpr std::string_view kModelPrefix = "/v1/models/";
constexpr std::string_view kResponsePrefix = "/v1/responses/";

}  // namespace

bool constant_time_equal(std::string_view a, std::string_view b) {
  // Compare every byte of the expected value whatever the input; fold the length difference in.
  unsigned char diff = static_cast<unsigned char>(a.size() != b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ static_cast<unsigned char>(b[i]));
  }
  return diff == 0;
}

std::optional<Router::Route> Router::find_route(std::string_view path) {
  if (path == "/health") return Route{RouteId::kHealth, "GET", true};
  // The web page and its assets are public: the page asks for the key and sends it.
  if (find_web_asset(path) != nullptr) return Route{RouteId::kWebAsset, "GET", true};
  if (path == "/metrics") return Route{RouteId::kMetrics, "GET", true};
  if (path == "/version") return Route{RouteId::kVersion, "GET", false};
  if (path == "/v1/models") return Route{RouteId::kModels, "GET", false};
  if (path.size() > kModelPrefix.size() && path.substr(0, kModelPrefix.size()) == kModelPrefix) {
    return Route{RouteId::kModel, "GET", false};
  }
  if (path == "/v1/chat/completions") return Route{RouteId::kChat, "POST", false};
  if (path == "/v1/completions") return Route{RouteId::kCompletions, "POST", false};
  if (path == "/tokenize") return Route{RouteId::kTokenize, "POST", false};
  if (path == "/detokenize") return Route{RouteId::kDetokenize, "POST", false};
  if (path == "/v1/messages") return Route{RouteId::kMessages, "POST", false};
  if (path == "/v1/messages/count_tokens") return Route{RouteId::kCountTokens, "POST", false};
  if (path == "/v1/responses") return Route{RouteId::kResponses, "POST", false};
  if (path == "/v1/load_lora_adapter") return Route{RouteId::kLoadLora, "POST", false};
  if (path == "/v1/unload_lora_adapter") return Route{RouteId::kUnloadLora, "POST", false};
  if (path == "/v1/embeddings") return Route{RouteId::kEmbeddings, "POST", false};
  if (path == "/v1/rerank" || path == "/rerank") return Route{RouteId::kRerank, "POST", false};
  if (path == "/v1/score") return Route{RouteId::kScore, "POST", false};
  if (path.size() > kResponsePrefix.size() && path.starts_with(kResponsePrefix) &&
      path.find('/', kResponsePrefix.size()) == std::string_view::npos) {
    return Route{RouteId::kResponse, "GET", false};
  }
  return std::nullopt;
}

bool Router::method_matches(const Route& route, std::string_view method) {
  // HEAD is GET without the body (load balancers probe /health with HEAD). A stored response
  // can also be deleted.
  return method == route.method || (method == "HEAD" && std::string_view(route.method) == "GET") ||
         (route.id == RouteId::kResponse && method == "DELETE");
}

int32_t Router::api_key_index(const RequestHead& head) const {
  const std::vector<std::string>& keys = state_.config().api_keys;
  if (keys.empty()) return -1;
  constexpr std::string_view kBearer = "Bearer ";
  // "Authorization: Bearer KEY" (OpenAI's SDKs), else "x-api-key: KEY" (Anthropic's).
  std::string_view given = head.authorization;
  if (!given.empty()) {
    if (given.size() < kBearer.size()) return -2;
    // The scheme is case-insensitive (RFC 7235).
    if (ascii_lower(given.substr(0, kBearer.size())) != "bearer ") return -2;
    given.remove_prefix(kBearer.size());
  } else if (!head.x_api_key.empty()) {
    given = head.x_api_key;
  } else {
    return -2;
  }
  int32_t found = -2;
  // Every key is compared (constant time each), whichever matches.
  for (size_t i = 0; i < keys.size(); ++i) {
    if (constant_time_equal(given, keys[i]) && found == -2) found = static_cast<int32_t>(i);
  }
  return found;
}

bool Router::authorized(const RequestHead& head) const {
  return api_key_index(head) != -2;
}

namespace {

// "Host[:port]" -> the lower-case host name or address (brackets of an IPv6 literal removed,
// one trailing dot dropped); nullopt when malformed.
std::optional<std::string> host_name(std::string_view authority) {
  std::string_view h = authority;
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    const std::string_view rest = h.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return std::nullopt;
    h = h.substr(1, close - 1);
  } else if (const size_t colon = h.rfind(':'); colon != std::string_view::npos) {
    if (h.find(':') != colon) return std::nullopt;  // a bare IPv6 address is not a Host
    h = h.substr(0, colon);
  }
  if (!h.empty() && h.back() == '.') h.remove_suffix(1);
  if (h.empty() || h.size() > 255) return std::nullopt;
  for (const char c : h) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == ':' || c == '%')) {
      return std::nullopt;
    }
  }
  return ascii_lower(h);
}

bool is_ip_literal(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

bool is_wildcard_address(const std::string& host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

// The media type of a Content-Type value, lower-case, without parameters.
std::string media_type(std::string_view value) {
  const size_t semi = value.find(';');
  std::string_view t = value.substr(0, semi);
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t'))
    t.remove_suffix(1);
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t'))
    t.remove_prefix(1);
  return ascii_lower(t);
}

ApiError forbidden(std::string message, std::string code) {
  ApiError e = bad_request(std::move(message));
  e.status = 403;
  e.type = "permission_error";
  e.code = std::move(code);
  return e;
}

}  // namespace

bool Router::host_allowed(const std::string& authority) const {
  const ServerConfig& cfg = state_.config();
  for (const std::string& h : cfg.allowed_hosts) {
    if (h == "*") return true;
  }
  const std::optional<std::string> name = host_name(authority);
  if (!name) return false;
  if (!cfg.allowed_hosts.empty()) {
    for (const std::string& h : cfg.allowed_hosts) {
      const std::optional<std::string> allowed = host_name(h);
      if (allowed && *allowed == *name) return true;
    }
    return false;
  }
  // The defaults: names that resolve to this machine's loopback, the loopback addresses, the
  // bound address. Bound to a wildcard address, any IP literal too: DNS rebinding needs a name
  // the attacker controls, never an address.
  if (*name == "localhost" || name->ends_with(".localhost") || *name == "127.0.0.1" ||
      *name == "::1") {
    return true;
  }
  const std::optional<std::string> bound = host_name(cfg.host);
  if (bound && *bound == *name) return true;
  if (is_wildcard_address(cfg.host) && is_ip_literal(*name)) return true;
  return false;
}

// The Origin is allowed: listed (or "*"), or same-origin (its authority is the Host).
bool Router::origin_allowed(const std::string& origin, const std::optional<std::string>& host,
                            bool& cross_origin) const {
  cross_origin = true;
  const std::string o = ascii_lower(origin);
  for (const std::string& a : state_.config().allowed_origins) {
    if (a == "*" || ascii_lower(a) == o) return true;
  }
  for (std::string_view scheme : {"http://", "https://"}) {
    if (o.size() > scheme.size() && o.compare(0, scheme.size(), scheme) == 0 && host &&
        o.substr(scheme.size()) == ascii_lower(*host)) {
      cross_origin = false;
      return true;
    }
  }
  return false;
}

std::optional<ApiError> Router::check_header(RequestHead& head) const {
  const ServerConfig& cfg = state_.config();
  if (head.target.size() > cfg.max_uri_bytes) return uri_too_long(cfg.max_uri_bytes);
  // DNS rebinding: a page of attacker.example whose name now resolves to 127.0.0.1 still sends
  // "Host: attacker.example".
  if (!head.host) {
    if (!head.http10) return bad_request("The request has no Host header", "");
  } else if (!host_allowed(*head.host)) {
    return forbidden(
        "The Host '" + head.host->substr(0, 256) + "' is not allowed (see --allowed-hosts)",
        "host_not_allowed");
  }
  // CSRF: a web page may send requests cross-origin; only listed origins are answered.
  if (head.origin) {
    bool cross = true;
    if (!origin_allowed(*head.origin, head.host, cross)) {
      return forbidden(
          "The Origin '" + head.origin->substr(0, 256) + "' is not allowed (see --allowed-origins)",
          "origin_not_allowed");
    }
    if (cross) head.cors_allow_origin = *head.origin;
  }
  const std::optional<Route> route = find_route(head.path);
  if (head.method == "OPTIONS" && route) return std::nullopt;  // answered by handle()
  const bool is_public = route && route->is_public && method_matches(*route, head.method);
  if (!is_public && !authorized(head)) return unauthorized();
  if (!route) return route_not_found(head.method, head.path);
  if (!method_matches(*route, head.method)) return method_not_allowed(head.method, head.path);
  if (head.content_length && *head.content_length > cfg.max_body_bytes) {
    return payload_too_large(cfg.max_body_bytes);
  }
  // JSON endpoints take application/json only: text/plain (or no type) is what a cross-site
  // form or fetch() may send without a preflight.
  if (std::string_view(route->method) == "POST") {
    const std::string type = head.content_type ? media_type(*head.content_type) : "";
    if (type != "application/json") {
      ApiError e =
          bad_request("Content-Type must be application/json, got " +
                      (head.content_type ? "'" + head.content_type->substr(0, 128) + "'" : "none"));
      e.status = 415;
      e.code = "unsupported_media_type";
      return e;
    }
  }
  return std::nullopt;
}

// The salt the KV cache hashes into a request's first block (every block's hash chains from it,
// and the root also carries a random per-process secret, kv/block_hash.h). The tenant tag before
// '|' never contains '|', so no client salt can make one tenant's chain equal another's.
std::string Router::effective_cache_salt(const std::string& client_salt,
                                         const RequestHead& head) const {
  switch (state_.config().prefix_cache_isolation) {
    case PrefixCacheIsolation::kNone:
      return client_salt;
    case PrefixCacheIsolation::kApiKey: {
      const int32_t key = api_key_index(head);
      if (key < 0) return client_salt;  // no keys configured: one tenant
      return fmt::format("k{}|{}", key, client_salt);
    }
    case PrefixCacheIsolation::kSalt:
      if (client_salt.empty()) {
        return fmt::format("u{}|", unsalted_.fetch_add(1, std::memory_order_relaxed));
      }
      return "s|" + client_salt;
  }
  return client_salt;
}

std::optional<ApiError> Router::not_ready() const {
  const int32_t retry = state_.config().retry_after_seconds;
  switch (state_.phase()) {
    case ServerPhase::kLoading:
      state_.metrics().count_rejection(Rejection::kLoading);
      return unavailable("The model is still loading", retry);
    case ServerPhase::kDraining:
      state_.metrics().count_rejection(Rejection::kDraining);
      return unavailable("The server is shutting down", retry);
    case ServerPhase::kFailed:
      return unavailable("The model failed to load", retry);
    case ServerPhase::kLost:
      return unavailable("A rank of the parallel job is gone; the server is exiting", retry);
    case ServerPhase::kReady:
      break;
  }
  return std::nullopt;
}

void Router::handle(const std::shared_ptr<HttpSession>& session, HttpRequest request) {
  const std::optional<Route> route = find_route(request.head.path);
  if (!route) {  // check_header already answered; defensive
    session->respond_error(route_not_found(request.head.method, request.head.path));
    return;
  }
  if (request.head.method == "OPTIONS") {
    HttpResponse r;
    r.status = 204;
    r.content_type.clear();
    const std::string methods = route->id == RouteId::kResponse       ? "GET, HEAD, DELETE"
                                : std::string(route->method) == "GET" ? "GET, HEAD"
                                                                      : "POST";
    r.headers.emplace_back("Allow", methods + ", OPTIONS");
    if (!request.head.cors_allow_origin.empty()) {
      r.headers.emplace_back("Access-Control-Allow-Methods", methods + ", OPTIONS");
      r.headers.emplace_back("Access-Control-Allow-Headers", "Authorization, Content-Type");
      r.headers.emplace_back("Access-Control-Max-Age", "600");
    }
    session->respond(std::move(r));
    return;
  }
  switch (route->id) {
    case RouteId::kHealth:
      session->respond(health());
      return;
    case RouteId::kMetrics:
      session->respond(metrics());
      return;
    case RouteId::kWebAsset:
      session->respond(
          web_asset_response(*find_web_asset(request.head.path), request.head.if_none_match));
      return;
    case RouteId::kChat:
    case RouteId::kCompletions:
    case RouteId::kMessages:
    case RouteId::kResponses:
    case RouteId::kEmbeddings:
    case RouteId::kTokenize:
    case RouteId::kDetokenize:
    case RouteId::kCountTokens:
    case RouteId::kLoadLora:
    case RouteId::kUnloadLora:
    case RouteId::kRerank:
    case RouteId::kScore:
      with_model(session, std::move(request), route->id);
      return;
    default:
      break;
  }
  if (auto err = not_ready()) {
    session->respond_error(*err);
    return;
  }
  switch (route->id) {
    case RouteId::kVersion:
      session->respond(json_response(json{{"version", "0.1.0"}}));
      return;
    case RouteId::kModels:
      session->respond(models());
      return;
    case RouteId::kModel:
      session->respond(model(std::string_view(request.head.path).substr(kModelPrefix.size())));
      return;
    case RouteId::kResponse:
      session->respond(stored_response(
          request.head.method, std::string_view(request.head.path).substr(kResponsePrefix.size())));
      return;
    default:
      session->respond_error(internal("unhandled route"));
  }
}

HttpResponse Router::health() const {
  const int32_t retry = state_.config().retry_after_seconds;
  switch (state_.phase()) {
    case ServerPhase::kLoading:
      return error_response(unavailable("The model is still loading", retry));
    case ServerPhase::kDraining:
      return error_response(unavailable("The server is shutting down", retry));
    case ServerPhase::kFailed:
      return error_response(unavailable("The model failed to load", retry));
    case ServerPhase::kLost:
      return error_response(
          unavailable("A rank of the parallel job is gone; the server is exiting", retry));
    case ServerPhase::kReady:
      break;
  }
  // A loaded model whose step loop died cannot serve (unloaded ones load on demand).
  for (const ModelSnapshot& m : state_.models().snapshot()) {
    if (m.stats && !m.stats->loop_alive) {
      return error_response(
          unavailable("The engine loop of model `" + m.name + "` has stopped", retry));
    }
  }
  return json_response(json{{"status", "ok"}});
}

HttpResponse Router::metrics() const {
  std::vector<ModelMetricsInput> inputs;
  for (ModelSnapshot& m : state_.models().snapshot()) {
    ModelMetricsInput in;
    in.name = m.name;
    in.state = m.state;
    in.stats = std::move(m.stats);
    in.engine_identity = m.engine_identity;
    in.loadable = state_.phase() == ServerPhase::kReady && m.last_error.empty();
    inputs.push_back(std::move(in));
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = state_.metrics().render(inputs);
  return r;
}

namespace {

// A model's /v1/models entry; max_model_len is known only while it is loaded (null otherwise).
json model_object(const ModelSnapshot& m, int64_t created) {
  return json{{"id", m.name},
              {"object", "model"},
              {"created", created},
              {"owned_by", "pagoda"},
              {"root", m.name},
              {"parent", nullptr},
              {"max_model_len", m.info ? json(m.info->context_length) : json(nullptr)},
              {"status", to_string(m.state)},
              {"permission", json::array()}};
}

ApiError model_not_found(std::string_view name) {
  ApiError e =
      from_status(not_found("The model `{}` does not exist or you do not have access to it.",
                            name.substr(0, 256)),
                  "model");
  e.type = "invalid_request_error";
  e.code = "model_not_found";
  return e;
}

}  // namespace

HttpResponse Router::models() const {
  const int64_t now = std::time(nullptr);
  json data = json::array();
  const std::vector<ModelSnapshot> snapshot = state_.models().snapshot();
  for (const ModelSnapshot& m : snapshot)
    data.push_back(model_object(m, now));
  for (const ModelSnapshot& m : snapshot) {
    for (const LoraAdapterInfo& a : m.lora_adapters)
      data.push_back(lora_adapter_object(a, m.name, now));
  }
  return json_response(json{{"object", "list"}, {"data", std::move(data)}});
}

HttpResponse Router::model(std::string_view id) const {
  const int64_t now = std::time(nullptr);
  const std::vector<ModelSnapshot> snapshot = state_.models().snapshot();
  for (const ModelSnapshot& m : snapshot) {
    if (m.name == id) return json_response(model_object(m, now));
  }
  for (const ModelSnapshot& m : snapshot) {
    for (const LoraAdapterInfo& a : m.lora_adapters) {
      if (a.name == id) return json_response(lora_adapter_object(a, m.name, now));
    }
  }
  return error_response(model_not_found(id));
}

namespace {

// The body of /tokenize and /detokenize: a JSON object whose optional "model" names this model.
std::optional<ApiError> parse_model_request(const std::string& body, int32_t max_depth,
                                            const ModelInfo& info, json& j) {
  if (auto err = parse_json_object(body, max_depth, j)) return err;
  if (auto m = j.find("model"); m != j.end() && !m->is_null()) {
    if (!m->is_string() || m->get<std::string>() != info.id) {
      return from_status(not_found("The model does not exist."), "model");
    }
  }
  return std::nullopt;
}

// A top-level key of `j` outside `known` (and not null) is refused by name, as on the generation
// endpoints.
std::optional<ApiError> refuse_unknown_fields(const json& j,
                                              std::initializer_list<std::string_view> known,
                                              std::string_view endpoint) {
  for (const auto& [key, value] : j.items()) {
    if (value.is_null() || std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string shown = key.substr(0, 64);
    ApiError e = bad_request(fmt::format("'{}' is not a field of {}", shown, endpoint), shown);
    e.code = "unknown_field";
    return e;
  }
  return std::nullopt;
}

}  // namespace

HttpResponse Router::tokenize(Engine& engine, const std::string& body) const {
  const ServerConfig& cfg = state_.config();
  const ModelInfo& info = engine.model_info();
  json j;
  if (auto err = parse_model_request(body, cfg.max_json_depth, info, j)) {
    return error_response(*err);
  }
  const auto flag = [&](const char* name, bool dflt, bool& out) -> std::optional<ApiError> {
    out = dflt;
    auto it = j.find(name);
    if (it == j.end() || it->is_null()) return std::nullopt;
    if (!it->is_boolean())
      return bad_request(std::string("'") + name + "' must be a boolean", name);
    out = it->get<bool>();
    return std::nullopt;
  };
  bool return_strs = false;
  if (auto e = flag("return_token_strs", false, return_strs)) return error_response(*e);
  std::vector<int32_t> tokens;
  if (auto p = j.find("prompt"); p != j.end() && !p->is_null()) {
    if (!p->is_string()) return error_response(bad_request("'prompt' must be a string", "prompt"));
    if (auto e = refuse_unknown_fields(
            j, {"model", "prompt", "add_special_tokens", "return_token_strs"}, "/tokenize")) {
      return error_response(*e);
    }
    bool add_special = true;
    if (auto e = flag("add_special_tokens", true, add_special)) return error_response(*e);
    tokens = engine.tokenize(p->get<std::string>(), add_special, /*parse_special=*/true);
  } else if (auto msgs = j.find("messages"); msgs != j.end() && !msgs->is_null()) {
    // The chat path of /v1/chat/completions, without generating.
    GenerationSpec spec;
    json req = j;
    req["max_tokens"] = 1;
    req.erase("model");
    req.erase("return_token_strs");  // the chat validator refuses the rest of what it does not know
    const std::string text = req.dump(-1, ' ', false, json::error_handler_t::replace);
    ServerConfig relaxed = cfg;
    if (auto err = parse_generation_request(text, Endpoint::kChat, engine, relaxed, spec)) {
      if (err->code == "unknown_field")
        err->message = "'" + err->param + "' is not a field of /tokenize";
      if (err->param != "max_tokens") return error_response(*err);
    }
    if (!spec.prompts.empty()) tokens = spec.prompts.front().tokens;
  } else {
    return error_response(bad_request("'prompt' or 'messages' is required", "prompt"));
  }
  json out = {{"count", tokens.size()}, {"max_model_len", info.context_length}, {"tokens", tokens}};
  if (return_strs) {
    json strs = json::array();
    for (int32_t t : tokens)
      strs.push_back(engine.detokenize({t}));
    out["token_strs"] = std::move(strs);
  } else {
    out["token_strs"] = nullptr;
  }
  return json_response(out);
}

HttpResponse Router::detokenize(Engine& engine, const std::string& body) const {
  const ServerConfig& cfg = state_.config();
  const ModelInfo& info = engine.model_info();
  json j;
  if (auto err = parse_model_request(body, cfg.max_json_depth, info, j)) {
    return error_response(*err);
  }
  if (auto e = refuse_unknown_fields(j, {"model", "tokens"}, "/detokenize"))
    return error_response(*e);
  auto t = j.find("tokens");
  if (t == j.end() || !t->is_array()) {
    return error_response(bad_request("'tokens' must be a list of token ids", "tokens"));
  }
  std::vector<int32_t> ids;
  ids.reserve(t->size());
  for (const json& v : *t) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= info.vocab_size) {
      return error_response(bad_request(
          "'tokens' must be token ids in [0, " + std::to_string(info.vocab_size) + ")", "tokens"));
    }
    ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
  }
  return json_response(json{{"prompt", engine.detokenize(ids)}});
}

HttpResponse Router::count_tokens(Engine& engine, const std::string& body) const {
  int64_t num_tokens = 0;
  if (auto err = count_message_tokens(body, engine, state_.config(), num_tokens)) {
    HttpResponse r = error_response(*err);
    r.body = err->body(ErrorShape::kAnthropic);
    return r;
  }
  return json_response(json{{"input_tokens", num_tokens}});
}

HttpResponse Router::stored_response(const std::string& method, std::string_view id) const {
  const std::string key(id);
  if (method == "DELETE") {
    if (state_.responses().erase(key)) {
      return json_response(json{{"id", key}, {"object", "response"}, {"deleted", true}});
    }
  } else if (std::optional<StoredResponse> r = state_.responses().get(key)) {
    HttpResponse resp;
    resp.body = std::move(r->response_json);
    return resp;
  }
  ApiError e =
      from_status(not_found("Response with id '{}' not found.", key.substr(0, 128)), "response_id");
  return error_response(e);
}

void Router::with_model(const std::shared_ptr<HttpSession>& session, HttpRequest request,
                        RouteId route) {
  if (auto err = not_ready()) {
    session->respond_error(*err);
    return;
  }
  ModelRegistry& registry = state_.models();
  std::string requested = registry.default_model();
  if (route != RouteId::kLoadLora && route != RouteId::kUnloadLora) {
    // Only the "model" field is read here; the body is validated again by its route's parser.
    json j;
    if (auto err = parse_json_object(request.body, state_.config().max_json_depth, j)) {
      state_.metrics().count_rejection(Rejection::kInvalid);
      session->respond_error(*err);
      return;
    }
    if (auto m = j.find("model"); m != j.end() && !m->is_null()) {
      if (!m->is_string()) {
        state_.metrics().count_rejection(Rejection::kInvalid);
        session->respond_error(bad_request("'model' must be a string", "model"));
        return;
      }
      requested = m->get<std::string>();
    }
  }
  const std::optional<std::string> name = registry.resolve(requested);
  if (!name) {
    state_.metrics().count_rejection(Rejection::kInvalid);
    session->respond_error(model_not_found(requested));
    return;
  }
  const int32_t retry = state_.config().retry_after_seconds;
  registry.acquire(*name, [this, session, route, retry,
                           request = std::move(request)](Result<ModelLease> lease) mutable {
    boost::asio::post(
        session->executor(), [this, session, route, retry, request = std::move(request),
                              lease = std::move(lease)]() mutable {
          if (!lease.ok()) {
            if (lease.status().code() == StatusCode::kUnavailable) {
              state_.metrics().count_rejection(Rejection::kLoading);
            }
            session->respond_error(from_status(lease.status(), "model", retry));
            return;
          }
          if (!session->connection_open()) return;  // gone while the model loaded
          ModelLease held = std::move(lease).value();
          if (!held->engine().stats().loop_alive) {
            session->respond_error(unavailable(
                "The engine loop of model `" + held->engine().model_info().id + "` has stopped",
                retry));
            return;
          }
          dispatch(session, request, route, std::move(held));
        });
  });
}

void Router::dispatch(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
                      RouteId route, ModelLease lease) {
  Engine& engine = lease->engine();
  const int32_t depth = state_.config().max_json_depth;
  switch (route) {
    case RouteId::kChat:
    case RouteId::kCompletions:
    case RouteId::kMessages:
    case RouteId::kResponses:
      generate(session, request, route, std::move(lease));
      return;
    case RouteId::kEmbeddings:
      embed(session, request, std::move(lease));
      return;
    case RouteId::kRerank:
    case RouteId::kScore:
      rerank(session, request, std::move(lease), route == RouteId::kScore);
      return;
    case RouteId::kTokenize:
      session->respond(tokenize(engine, request.body));
      return;
    case RouteId::kDetokenize:
      session->respond(detokenize(engine, request.body));
      return;
    case RouteId::kCountTokens:
      session->respond(count_tokens(engine, request.body));
      return;
    case RouteId::kLoadLora:
      session->respond(load_lora_adapter(engine, request.body, depth));
      return;
    case RouteId::kUnloadLora:
      session->respond(unload_lora_adapter(engine, request.body, depth));
      return;
    default:
      session->respond_error(internal("unhandled route"));
  }
}

void Router::generate(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
                      RouteId route, ModelLease lease) {
  Engine& engine = lease->engine();
  const ServerConfig& cfg = state_.config();
  GenerationSpec spec;
  std::unique_ptr<ResponseEncoder> encoder;
  std::optional<ApiError> err;
  if (route == RouteId::kMessages) {
    err = parse_messages_request(request.body, engine, cfg, spec);
    if (!err) {
      encoder = std::make_unique<AnthropicMessageEncoder>(
          make_response_id("msg_"), spec.model,
          static_cast<int64_t>(spec.prompts.front().tokens.size()));
    }
  } else if (route == RouteId::kResponses) {
    ResponsesRequest rr;
    err = parse_responses_request(request.body, engine, cfg, state_.responses(), rr);
    if (!err) {
      spec = std::move(rr.spec);
      encoder = std::make_unique<ResponsesEncoder>(make_response_id("resp_"), spec.model,
                                                   static_cast<int64_t>(std::time(nullptr)), rr,
                                                   &state_.responses());
    }
  } else {
    err = parse_generation_request(
        request.body, route == RouteId::kChat ? Endpoint::kChat : Endpoint::kCompletion, engine,
        cfg, spec);
  }
  if (err) {
    state_.metrics().count_rejection(Rejection::kInvalid);
    session->respond_error(*err);
    return;
  }
  spec.cache_salt = effective_cache_salt(spec.cache_salt, request.head);
  auto job =
      std::make_shared<GenerationJob>(std::move(spec), engine, state_, session, std::move(encoder));
  job->hold(std::move(lease));
  job->start();
}

void Router::embed(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
                   ModelLease lease) {
  Engine& engine = lease->engine();
  EmbeddingsSpec spec;
  if (auto err = parse_embeddings_request(request.body, engine, state_.config(), spec)) {
    state_.metrics().count_rejection(Rejection::kInvalid);
    session->respond_error(*err);
    return;
  }
  auto job =
      std::make_shared<EmbeddingJob>(embeddings_work(std::move(spec)), engine, state_, session);
  job->hold(std::move(lease));
  job->start();
}

void Router::rerank(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
                    ModelLease lease, bool score) {
  Engine& engine = lease->engine();
  RerankSpec spec;
  auto err = score ? parse_score_request(request.body, engine, state_.config(), spec)
                   : parse_rerank_request(request.body, engine, state_.config(), spec);
  if (err) {
    state_.metrics().count_rejection(Rejection::kInvalid);
    session->respond_error(*err);
    return;
  }
  auto job =
      std::make_shared<EmbeddingJob>(rerank_work(std::move(spec), score), engine, state_, session);
  job->hold(std::move(lease));
  job->start();
}

}  // namespace pagoda::server
