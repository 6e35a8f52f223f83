// Router: the route table and the small endpoints. check_header() runs before a body is read:
// URI length, Host (--allowed-hosts: DNS rebinding), Origin (--allowed-origins: CSRF; CORS
// preflights pass to handle()), authentication (every route but GET/HEAD /health, /metrics and
// the web page's files needs a key when keys are set, unknown paths included, so no path trick
// is answered without it), route, method, Content-Length and, on the JSON endpoints,
// Content-Type (415 unless application/json). handle() answers a complete request: /health,
// /metrics, the web page (GET /, server/web_assets.h), /v1/models, /tokenize, /detokenize,
// /v1/messages/count_tokens and GET / DELETE /v1/responses/{id} directly; /v1/embeddings through
// an EmbeddingJob; /v1/chat/completions, /v1/completions, /v1/messages (Anthropic) and
// /v1/responses through a GenerationJob (the last two with their API's ResponseEncoder). Paths
// are matched exactly (no normalisation: "//v1/models", "/v1/../x" and "%2e%2e" are simply
// unknown).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"
#include "server/http_types.h"
#include "server/model_registry.h"

namespace pagoda::server {

class HttpSession;
class ServerState;

class Router {
 public:
  explicit Router(ServerState& state) : state_(state) {}

  // May set head.cors_allow_origin.
  std::optional<ApiError> check_header(RequestHead& head) const;
  // The index of the API key the request carries (Authorization: Bearer, else x-api-key); -1 when
  // no key is configured, -2 when it carries none of them.
  int32_t api_key_index(const RequestHead& head) const;
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
    kMessages,     // Anthropic: POST /v1/messages
    kCountTokens,  // Anthropic: POST /v1/messages/count_tokens
    kResponses,    // POST /v1/responses
    kResponse,     // GET / DELETE /v1/responses/{id}
    kWebAsset,     // GET / and the web page's files (server/web_assets.h)
    kLoadLora,     // POST /v1/load_lora_adapter (server/lora_routes.h)
    kUnloadLora,   // POST /v1/unload_lora_adapter
    kEmbeddings,   // POST /v1/embeddings
    kRerank,       // POST /v1/rerank, /rerank
    kScore,        // POST /v1/score
  };
  struct Route {
    RouteId id;
    const char* method;
    bool is_public;
  };
  static std::optional<Route> find_route(std::string_view path);
  static bool method_matches(const Route& route, std::string_view method);
  bool authorized(const RequestHead& head) const;
  bool host_allowed(const std::string& authority) const;
  bool origin_allowed(const std::string& origin, const std::optional<std::string>& host,
                      bool& cross_origin) const;

  HttpResponse health() const;
  HttpResponse metrics() const;
  HttpResponse models() const;
  HttpResponse model(std::string_view id) const;
  HttpResponse tokenize(Engine& engine, const std::string& body) const;
  HttpResponse detokenize(Engine& engine, const std::string& body) const;
  HttpResponse count_tokens(Engine& engine, const std::string& body) const;
  HttpResponse stored_response(const std::string& method, std::string_view id) const;
  // The routes that run on a model: the body's "model" (absent: the first model; the LoRA
  // routes: always the first model) picks it in the registry, which hands a lease on its engine
  // once it is loaded; then dispatch() runs on the session's strand. An unknown model is a 404
  // model_not_found; a failed load or a full --max-loaded-models of busy models a 500 / 503.
  void with_model(const std::shared_ptr<HttpSession>& session, HttpRequest request, RouteId route);
  void dispatch(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
                RouteId route, ModelLease lease);
  void generate(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
                RouteId route, ModelLease lease);
  // /v1/embeddings through an EmbeddingJob.
  void embed(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
             ModelLease lease);
  // /v1/rerank and /rerank, or /v1/score (`score`): cross-encoder pooling (openai_rerank.h).
  void rerank(const std::shared_ptr<HttpSession>& session, const HttpRequest& request,
              ModelLease lease, bool score);
  // The cache salt a request's prefix-cache chain is seeded with (--prefix-cache-isolation).
  std::string effective_cache_salt(const std::string& client_salt, const RequestHead& head) const;
  // 503 while loading / draining / after the model failed to load at startup; nullopt when ready.
  std::optional<ApiError> not_ready() const;

  ServerState& state_;
  mutable std::atomic<uint64_t> unsalted_{0};  // kSalt: a fresh salt per unsalted request
};

// Constant-time equality (the time depends only on the lengths).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace pagoda::server
