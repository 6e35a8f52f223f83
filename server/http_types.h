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
  std::string target;  // as sent: path + optional "?query"
  std::string path;    // target up to '?'
  std::string authorization;
  std::optional<uint64_t> content_length;
  bool chunked = false;
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
