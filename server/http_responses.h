// Building complete HTTP responses from a JSON body or an ApiError (the small endpoints of
// router.cc and lora_routes.cc).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/http_types.h"

namespace pagoda::server {

// 200 (or `status`) with `j` serialised; invalid UTF-8 in strings is replaced, never thrown.
inline HttpResponse json_response(const nlohmann::json& j, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

// The error's status and body, with Retry-After when it has one.
inline HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = e.body();
  if (e.retry_after_seconds > 0) {
    r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_seconds));
  }
  return r;
}

}  // namespace pagoda::server
