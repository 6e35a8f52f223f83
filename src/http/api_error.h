// ApiError (shared by server/ and router/): an OpenAI-style error ({"error": {"message", "type",
// "param", "code"}}) with its HTTP status. from_status() is the one place where a pagoda::Status
// becomes an HTTP status and an error type; handlers build ApiErrors only through it or the named
// builders below.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pagoda/status.h"

namespace pagoda::http {

// The error body's shape: OpenAI's (every route but Anthropic's) or Anthropic's ({"type": "error",
// "error": {"type", "message"}}, its error types chosen by the HTTP status).
enum class ErrorShape { kOpenAI, kAnthropic };

// The shape of the errors of a request path: Anthropic's on /v1/messages and below.
ErrorShape error_shape_for_path(std::string_view path);

struct ApiError {
  int status = 500;
  std::string message;
  std::string type;   // invalid_request_error, authentication_error, not_found_error, ...
  std::string param;  // the offending request field, "" = null
  std::string code;   // a machine-readable code, "" = null (always a string or null, as OpenAI)
  int32_t retry_after_seconds = 0;  // > 0: a Retry-After header (429, 503)

  // {"error": {"message", "type", "param", "code"}}; "code" is a string or null, never a number.
  std::string body(ErrorShape shape = ErrorShape::kOpenAI) const;
};

// The mapping: invalid_argument / out_of_range -> 400, not_found -> 404, resource_exhausted ->
// 429 (Retry-After), failed_precondition / unavailable -> 503 (Retry-After), deadline_exceeded
// -> 429 (queue timeout), unimplemented -> 400, anything else -> 500.
ApiError from_status(const Status& status, std::string param = "", int32_t retry_after_seconds = 1);

// Named builders for what the HTTP layer itself detects.
ApiError bad_request(std::string message, std::string param = "");
ApiError unauthorized();
ApiError route_not_found(const std::string& method, const std::string& path);
ApiError method_not_allowed(const std::string& method, const std::string& path);
ApiError payload_too_large(uint64_t limit);
ApiError uri_too_long(uint32_t limit);
ApiError headers_too_large(uint32_t limit);
ApiError unavailable(std::string message, int32_t retry_after_seconds);
ApiError too_many_requests(std::string message, std::string code, int32_t retry_after_seconds);
ApiError internal(std::string message);

// The reason phrase for an HTTP status ("Bad Request").
const char* reason_phrase(int status);

}  // namespace pagoda::http
