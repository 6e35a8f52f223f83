#include "http/api_error.h"

#include <nlohmann/json.hpp>

namespace pagoda::http {

ErrorShape error_shape_for_path(std::string_view path) {
  constexpr std::string_view kMessages = "/v1/messages";
  if (path.starts_with(kMessages) &&
      (path.size() == kMessages.size() || path[kMessages.size()] == '/')) {
    return ErrorShape::kAnthropic;
  }
  return ErrorShape::kOpenAI;
}

namespace {

// Anthropic's error types (docs.anthropic.com "Errors"), by HTTP status.
const char* anthropic_error_type(int status) {
  switch (status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

}  // namespace

std::string ApiError::body(ErrorShape shape) const {
  if (shape == ErrorShape::kAnthropic) {
    nlohmann::json j = {{"type", "error"},
                        {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  nlohmann::json err = {{"message", message},
                        {"type", type},
                        {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
                        {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}};
  nlohmann::json j = {{"error", std::move(err)}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

ApiError make(int status, std::string message, std::string type, std::string param = "",
              std::string code = "", int32_t retry_after = 0) {
  ApiError e;
  e.status = status;
  e.message = std::move(message);
  e.type = std::move(type);
  e.param = std::move(param);
  e.code = std::move(code);
  e.retry_after_seconds = retry_after;
  return e;
}

}  // namespace

ApiError from_status(const Status& status, std::string param, int32_t retry_after_seconds) {
  switch (status.code()) {
    case StatusCode::kOk:
      return internal("from_status called with an ok status");
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return make(400, status.message(), "invalid_request_error", std::move(param));
    case StatusCode::kUnimplemented:
      return make(400, status.message(), "invalid_request_error", std::move(param), "unsupported");
    case StatusCode::kNotFound:
      return make(404, status.message(), "not_found_error", std::move(param), "not_found");
    case StatusCode::kResourceExhausted:
      return too_many_requests(status.message(), "queue_full", retry_after_seconds);
    case StatusCode::kDeadlineExceeded:
      return too_many_requests(status.message(), "queue_timeout", retry_after_seconds);
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnavailable:
      return unavailable(status.message(), retry_after_seconds);
    case StatusCode::kCancelled:
    case StatusCode::kIo:
    case StatusCode::kInternal:
      break;
  }
  return internal(status.message());
}

ApiError bad_request(std::string message, std::string param) {
  return make(400, std::move(message), "invalid_request_error", std::move(param));
}

ApiError unauthorized() {
  return make(401,
              "Incorrect or missing API key: pass it as 'Authorization: Bearer <key>' or "
              "'x-api-key: <key>'",
              "authentication_error", "", "invalid_api_key");
}

ApiError route_not_found(const std::string& method, const std::string& path) {
  // The path is echoed only up to a bound and as JSON (escaped), never as HTML.
  std::string shown = path.size() > 256 ? path.substr(0, 256) + "..." : path;
  return make(404, "Not found: " + method + " " + shown, "not_found_error", "", "not_found");
}

ApiError method_not_allowed(const std::string& method, const std::string& path) {
  std::string shown = path.size() > 256 ? path.substr(0, 256) + "..." : path;
  return make(405, "Method " + method + " not allowed on " + shown, "invalid_request_error", "",
              "method_not_allowed");
}

ApiError payload_too_large(uint64_t limit) {
  return make(413, "Request body exceeds the limit of " + std::to_string(limit) + " bytes",
              "invalid_request_error", "", "payload_too_large");
}

ApiError uri_too_long(uint32_t limit) {
  return make(414, "Request target exceeds the limit of " + std::to_string(limit) + " bytes",
              "invalid_request_error", "", "uri_too_long");
}

ApiError headers_too_large(uint32_t limit) {
  return make(431, "Request headers exceed the limit of " + std::to_string(limit) + " bytes",
              "invalid_request_error", "", "headers_too_large");
}

ApiError unavailable(std::string message, int32_t retry_after_seconds) {
  return make(503, std::move(message), "service_unavailable_error", "", "service_unavailable",
              retry_after_seconds);
}

ApiError too_many_requests(std::string message, std::string code, int32_t retry_after_seconds) {
  return make(429, std::move(message), "rate_limit_error", "", std::move(code),
              retry_after_seconds > 0 ? retry_after_seconds : 1);
}

ApiError internal(std::string message) {
  return make(500, std::move(message), "server_error", "", "internal_error");
}

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 204:
      return "No Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

}  // namespace pagoda::http
