#include "server/router.h"

#include <cctype>
#include <ctime>

#include <nlohmann/json.hpp>

#include "server/generation_job.h"
#include "server/http_session.h"
#include "server/openai_request.h"
#include "server/server_state.h"

namespace pagoda::server {

using nlohmann::json;

namespace {

constexpr std::string_view kModelPrefix = "/v1/models/";

HttpResponse json_response(const json& j, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return r;
}

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = e.body();
  if (e.retry_after_seconds > 0) {
    r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_seconds));
  }
  return r;
}

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
  return std::nullopt;
}

bool Router::authorized(const std::string& authorization) const {
  const std::string& key = state_.config().api_key;
  if (key.empty()) return true;
  constexpr std::string_view kBearer = "Bearer ";
  std::string_view given = authorization;
  if (given.size() < kBearer.size()) return false;
  // The scheme is case-insensitive (RFC 7235).
  std::string scheme(given.substr(0, kBearer.size()));
  for (char& c : scheme)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (scheme != "bearer ") return false;
  given.remove_prefix(kBearer.size());
  return constant_time_equal(given, key);
}

std::optional<ApiError> Router::check_header(const RequestHead& head) const {
  const ServerConfig& cfg = state_.config();
  if (head.target.size() > cfg.max_uri_bytes) return uri_too_long(cfg.max_uri_bytes);
  const std::optional<Route> route = find_route(head.path);
  const bool is_public = route && route->is_public && head.method == route->method;
  if (!is_public && !authorized(head.authorization)) return unauthorized();
  if (!route) return route_not_found(head.method, head.path);
  if (head.method != route->method) return method_not_allowed(head.method, head.path);
  if (head.content_length && *head.content_length > cfg.max_body_bytes) {
    return payload_too_large(cfg.max_body_bytes);
  }
  return std::nullopt;
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
    case ServerPhase::kReady:
      break;
  }
  Engine* engine = state_.engine();
  if (engine == nullptr || !engine->stats().loop_alive) {
    return unavailable("The engine loop has stopped", retry);
  }
  return std::nullopt;
}

void Router::handle(const std::shared_ptr<HttpSession>& session, HttpRequest request) {
  const std::optional<Route> route = find_route(request.head.path);
  if (!route) {  // check_header already answered; defensive
    session->respond_error(route_not_found(request.head.method, request.head.path));
    return;
  }
  switch (route->id) {
    case RouteId::kHealth:
      session->respond(health());
      return;
    case RouteId::kMetrics:
      session->respond(metrics());
      return;
    case RouteId::kChat:
    case RouteId::kCompletions:
      generate(session, request, route->id == RouteId::kChat);
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
    case RouteId::kTokenize:
      session->respond(tokenize(request.body));
      return;
    case RouteId::kDetokenize:
      session->respond(detokenize(request.body));
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
    case ServerPhase::kReady:
      break;
  }
  Engine* engine = state_.engine();
  if (engine == nullptr || !engine->stats().loop_alive) {
    return error_response(unavailable("The engine loop has stopped", retry));
  }
  return json_response(json{{"status", "ok"}});
}

HttpResponse Router::metrics() const {
  Engine* engine = state_.engine();
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  if (engine != nullptr) {
    const EngineStats stats = engine->stats();
    r.body = state_.metrics().render(&stats);
  } else {
    r.body = state_.metrics().render(nullptr);
  }
  return r;
}

namespace {

json model_object(const ModelInfo& info, int64_t created) {
  return json{{"id", info.id},
              {"object", "model"},
              {"created", created},
              {"owned_by", "pagoda"},
              {"root", info.id},
              {"parent", nullptr},
              {"max_model_len", info.context_length},
              {"permission", json::array()}};
}

}  // namespace

HttpResponse Router::models() const {
  const ModelInfo& info = state_.engine()->model_info();
  return json_response(
      json{{"object", "list"}, {"data", json::array({model_object(info, std::time(nullptr))})}});
}

HttpResponse Router::model(std::string_view id) const {
  const ModelInfo& info = state_.engine()->model_info();
  if (id != info.id) {
    return error_response(
        from_status(not_found("The model `{}` does not exist.", id.substr(0, 256)), "model"));
  }
  return json_response(model_object(info, std::time(nullptr)));
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

}  // namespace

HttpResponse Router::tokenize(const std::string& body) const {
  const ServerConfig& cfg = state_.config();
  Engine& engine = *state_.engine();
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
    bool add_special = true;
    if (auto e = flag("add_special_tokens", true, add_special)) return error_response(*e);
    tokens = engine.tokenize(p->get<std::string>(), add_special, /*parse_special=*/true);
  } else if (auto msgs = j.find("messages"); msgs != j.end() && !msgs->is_null()) {
    // The chat path of /v1/chat/completions, without generating.
    GenerationSpec spec;
    json req = j;
    req["max_tokens"] = 1;
    req.erase("model");
    const std::string text = req.dump(-1, ' ', false, json::error_handler_t::replace);
    ServerConfig relaxed = cfg;
    if (auto err = parse_generation_request(text, Endpoint::kChat, engine, relaxed, spec)) {
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

HttpResponse Router::detokenize(const std::string& body) const {
  const ServerConfig& cfg = state_.config();
  Engine& engine = *state_.engine();
  const ModelInfo& info = engine.model_info();
  json j;
  if (auto err = parse_model_request(body, cfg.max_json_depth, info, j)) {
    return error_response(*err);
  }
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

void Router::generate(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
                      bool chat) {
  if (auto err = not_ready()) {
    session->respond_error(*err);
    return;
  }
  Engine& engine = *state_.engine();
  GenerationSpec spec;
  if (auto err =
          parse_generation_request(request.body, chat ? Endpoint::kChat : Endpoint::kCompletion,
                                   engine, state_.config(), spec)) {
    state_.metrics().count_rejection(Rejection::kInvalid);
    session->respond_error(*err);
    return;
  }
  auto job = std::make_shared<GenerationJob>(std::move(spec), engine, state_, session);
  job->start();
}

}  // namespace pagoda::server
