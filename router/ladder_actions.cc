#include "router/ladder_actions.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pagoda::router {

using json = nlohmann::json;

namespace {

constexpr const char* kLengthFields[] = {"max_tokens", "max_completion_tokens",
                                         "max_output_tokens"};

bool neutral(const std::string& field, const json& v) {
  if (v.is_null()) return true;
  if (v.is_boolean()) return !v.get<bool>();
  if (v.is_number_integer() || v.is_number_float()) {
    double d = v.get<double>();
    return d == 0 || ((field == "n" || field == "best_of") && d == 1);
  }
  if (v.is_array()) return v.empty();
  if (field == "response_format" && v.is_object()) {
    auto t = v.find("type");
    return t != v.end() && *t == "text";
  }
  return false;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

bool clamp_max_tokens(json& body, const std::string& path, uint32_t cap) {
  bool changed = false;
  bool present = false;
  for (const char* f : kLengthFields) {
    auto it = body.find(f);
    if (it == body.end() || it->is_null()) continue;
    present = true;
    if (it->is_number() && it->get<double>() > cap) {
      *it = cap;
      changed = true;
    }
  }
  if (!present && (path == "/v1/chat/completions" || path == "/v1/completions")) {
    body["max_tokens"] = cap;
    changed = true;
  }
  return changed;
}

std::optional<http::ApiError> refuse_disabled(const json& body,
                                              const std::vector<std::string>& disabled,
                                              int32_t retry_after_s) {
  for (const std::string& f : disabled) {
    auto it = body.find(f);
    if (it == body.end() || neutral(f, *it)) continue;
    http::ApiError e = http::unavailable(
        fmt::format("'{}' is turned off while the service is degraded; retry without it or later",
                    f),
        retry_after_s);
    e.param = f;
    e.code = "feature_disabled";
    return e;
  }
  return std::nullopt;
}

std::optional<uint64_t> requested_max_tokens(const json& body) {
  for (const char* f : kLengthFields) {
    auto it = body.find(f);
    if (it != body.end() && it->is_number_integer() && it->get<int64_t>() >= 0) {
      return it->get<uint64_t>();
    }
  }
  return std::nullopt;
}

std::optional<PresetReply> preset_reply(const std::string& path, const std::string& model,
                                        const std::string& text, bool stream) {
  const bool chat = path == "/v1/chat/completions";
  if (!chat && path != "/v1/completions") return std::nullopt;
  const std::string id = chat ? "chatcmpl-preset" : "cmpl-preset";
  const int64_t created = 0;
  if (!stream) {
    json choice = {{"index", 0}, {"finish_reason", "stop"}, {"logprobs", nullptr}};
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
      choice["text"] = text;
    }
    json j = {{"id", id},
              {"object", chat ? "chat.completion" : "text_completion"},
              {"created", created},
              {"model", model},
              {"choices", json::array({choice})},
              {"usage", {{"prompt_tokens", 0}, {"completion_tokens", 0}, {"total_tokens", 0}}}};
    return PresetReply{"application/json", dump(j)};
  }
  const char* object = chat ? "chat.completion.chunk" : "text_completion";
  auto chunk = [&](json delta_or_text, json finish) {
    json choice = {{"index", 0}, {"finish_reason", finish}, {"logprobs", nullptr}};
    if (chat) {
      choice["delta"] = std::move(delta_or_text);
    } else {
      choice["text"] = std::move(delta_or_text);
    }
    json j = {{"id", id},
              {"object", object},
              {"created", created},
              {"model", model},
              {"choices", json::array({choice})}};
    return "data: " + dump(j) + "\n\n";
  };
  std::string out;
  if (chat) {
    out += chunk({{"role", "assistant"}, {"content", text}}, nullptr);
    out += chunk(json::object(), "stop");
  } else {
    out += chunk(text, nullptr);
    out += chunk("", "stop");
  }
  out += "data: [DONE]\n\n";
  return PresetReply{"text/event-stream", std::move(out)};
}

}  // namespace pagoda::router
