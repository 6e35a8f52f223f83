// Router: the route table and the small endpoints. check_header() runs before a body is read:
// URI length, authentication (every route but GET /health and GET /metrics needs the key when
// one is set, unknown paths included, so no path trick is answered without it), route, method
// and Content-Length. handle() answers a complete request: /health, /metrics, /v1/models,
// /tokenize, /detokenize directly; /v1/chat/completions and /v1/completions through a
// GenerationJob. Paths are matched exactly (no normalisation: "//v1/models", "/v1/../x" and
// "%2e%2e" are simply unknown).
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "server/api_error.h"
#include "server/http_types.h"

namespace pagoda::server {

class HttpSession;
class ServerState;

class Router {
 public:
  explicit Router(ServerState& state) : state_(state) {}

  std::optional<ApiError> check_header(const RequestHead& head) const;
  void handle(const std::shared_ptr<HttpSession>& session, HttpRequest request);

 private:
  enum class RouteId {
    kHealth,
    kMetrics,
    kVersion,
    kModels,
    kModel,  // /v1/models/{id}
    kChat,
    kCompletions,
    kTokenize,
    kDetokenize,
  };
  struct Route {
    RouteId id;
    const char* method;
    bool is_public;
  };
  static std::optional<Route> find_route(std::string_view path);
  bool authorized(const std::string& authorization) const;

  HttpResponse health() const;
  HttpResponse metrics() const;
  HttpResponse models() const;
  HttpResponse model(std::string_view id) const;
  HttpResponse tokenize(const std::string& body) const;
  HttpResponse detokenize(const std::string& body) const;
  void generate(const std::shared_ptr<HttpSession>& session, const HttpRequest& request, bool chat);
  // 503 while loading / draining / after the engine loop died; nullopt when ready.
  std::optional<ApiError> not_ready() const;

  ServerState& state_;
};

// Constant-time equality (the time depends only on the lengths).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace pagoda::server
