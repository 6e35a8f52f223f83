// OpenAI batch file lines (see batch_file.h).
#include "server/batch_file.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/openai_response.h"

namespace pagoda::server {

using nlohmann::json;

std::string batch_error_line(const std::string& custom_id, const std::string& code,
                             const std::string& message) {
  json j = {{"id", make_response_id("batch_req_")},
            {"custom_id", custom_id.empty() ? json(nullptr) : json(custom_id)},
            {"response", nullptr},
            {"error", {{"code", code}, {"message", message}}}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string batch_response_line(const std::string& custom_id, const OfflineResult& r) {
  json body = json::parse(r.body, nullptr, false);
  if (body.is_discarded()) body = r.body;
  json j = {
      {"id", make_response_id("batch_req_")},
      {"custom_id", custom_id},
      {"response", {{"status_code", r.status_code}, {"request_id", r.request_id}, {"body", body}}},
      {"error", nullptr}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

BatchLine parse_batch_line(std::string_view text, size_t line_number) {
  BatchLine b;
  const json j = json::parse(text, nullptr, false);
  const auto bad = [&](std::string code, std::string message) {
    b.error_code = std::move(code);
    b.error_message = fmt::format("line {}: {}", line_number, message);
    return b;
  };
  if (!j.is_object()) return bad("invalid_json", "not a JSON object");
  if (const auto it = j.find("custom_id"); it != j.end() && it->is_string()) {
    b.custom_id = it->get<std::string>();
  }
  if (b.custom_id.empty())
    return bad("missing_custom_id", "'custom_id' must be a non-empty string");
  if (b.custom_id.size() > 512) return bad("invalid_custom_id", "'custom_id' is over 512 bytes");
  for (const auto& [key, value] : j.items()) {
    if (key != "custom_id" && key != "method" && key != "url" && key != "body") {
      return bad("unknown_field", fmt::format("unknown field '{}'", key.substr(0, 64)));
    }
  }
  const auto method = j.find("method");
  if (method == j.end() || !method->is_string() || method->get<std::string>() != "POST") {
    return bad("invalid_method", "'method' must be \"POST\"");
  }
  const auto url = j.find("url");
  if (url == j.end() || !url->is_string()) return bad("invalid_url", "'url' must be a string");
  const std::string u = url->get<std::string>();
  if (u == "/v1/chat/completions") {
    b.endpoint = Endpoint::kChat;
  } else if (u == "/v1/completions") {
    b.endpoint = Endpoint::kCompletion;
  } else if (u == "/v1/embeddings") {
    b.url = BatchUrl::kEmbeddings;
  } else if (u == "/v1/rerank" || u == "/rerank") {
    b.url = BatchUrl::kRerank;
  } else if (u == "/v1/score") {
    b.url = BatchUrl::kScore;
  } else {
    return bad("invalid_url",
               fmt::format("'url' {} is not supported (use /v1/chat/completions, /v1/completions, "
                           "/v1/embeddings, /v1/rerank or /v1/score)",
                           json(u.substr(0, 64)).dump()));
  }
  const auto body = j.find("body");
  if (body == j.end() || !body->is_object()) return bad("invalid_body", "'body' must be an object");
  if (const auto s = body->find("stream"); s != body->end() && s->is_boolean() && s->get<bool>()) {
    return bad("invalid_body", "'body.stream' must be false in a batch");
  }
  b.body = body->dump(-1, ' ', false, json::error_handler_t::replace);
  return b;
}

std::unordered_set<std::string> batch_done_ids(std::string_view text, size_t& complete_bytes) {
  std::unordered_set<std::string> done;
  const size_t last = text.rfind('\n');
  complete_bytes = last == std::string_view::npos ? 0 : last + 1;
  size_t start = 0;
  while (start < complete_bytes) {
    const size_t end = text.find('\n', start);
    const json j = json::parse(text.substr(start, end - start), nullptr, false);
    start = end + 1;
    if (j.is_object() && j.contains("custom_id") && j["custom_id"].is_string()) {
      done.insert(j["custom_id"].get<std::string>());
    }
  }
  return done;
}

}  // namespace pagoda::server
