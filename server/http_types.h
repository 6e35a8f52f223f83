// Plain request/response values passed between the connection (HttpSession) and the routes
// (Router). No Beast types leak past the session.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pagoda::server {

// What the router needs of a request header (checked before the body is read).
struct RequestHead {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: path + optional "?query" (or the absolute form)
  std::string path;    // target up to '?' (the path of an absolute-form target)
  std::string authorization;
  std::string x_api_key;  // Anthropic's x-api-key header (an alternative to Authorization: Bearer)
  std::optional<uint64_t> content_length;
  bool chunked = false;
  bool http10 = false;
  // Host: the authority of an absolute-form target, else the Host header; nullopt when there is
  // none. More than one Host header is refused before the router sees the request.
  std::optional<std::string> host;
  std::optional<std::string> origin;        // the Origin header
  std::optional<std::string> content_type;  // the Content-Type header
  std::string if_none_match;                // the If-None-Match header (the web page's assets)
  bool preflight = false;  // OPTIONS with Access-Control-Request-Method (CORS preflight)
  // Set by Router::check_header: the Origin to echo in Access-Control-Allow-Origin ("" = none).
  std::string cors_allow_origin;
};

struct HttpRequest {
  RequestHead head;
  std::string body;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra headers
};

}  // namespace pagoda::server
