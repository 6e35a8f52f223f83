#include "router/sse_relay.h"

#include <nlohmann/json.hpp>

namespace pagoda::router {

namespace {

constexpr size_t kMaxHeldBytes = 1u << 20;
constexpr size_t kMaxRememberedEvent = 64u << 10;

}  // namespace

void SseRelay::note_event(std::string_view event) {
  // An event is lines; the data lines carry the payload (pagoda serve and OpenAI send one).
  size_t pos = 0;
  while (pos < event.size()) {
    size_t nl = event.find('\n', pos);
    std::string_view line = event.substr(pos, nl == std::string_view::npos ? nl : nl - pos);
    pos = nl == std::string_view::npos ? event.size() : nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.starts_with("data:")) continue;
    std::string_view data = line.substr(5);
    if (data.starts_with(" ")) data.remove_prefix(1);
    if (data == "[DONE]") {
      saw_done_ = true;
      continue;
    }
    ++num_data_events_;
    if (data.starts_with("{") && data.size() <= kMaxRememberedEvent) last_data_.assign(data);
  }
}

std::string SseRelay::push(std::string_view bytes) {
  held_.append(bytes);
  size_t end = held_.rfind("\n\n");
  if (end == std::string::npos) {
    if (held_.size() <= kMaxHeldBytes) return "";
    std::string out = std::move(held_);
    held_.clear();
    return out;
  }
  end += 2;
  std::string out = held_.substr(0, end);
  held_.erase(0, end);
  // Remember the last complete event (and whether [DONE] went by).
  std::string_view view(out);
  size_t start = 0;
  while (start < view.size()) {
    size_t stop = view.find("\n\n", start);
    if (stop == std::string_view::npos) break;
    note_event(view.substr(start, stop - start));
    start = stop + 2;
  }
  return out;
}

std::string SseRelay::flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

std::string SseRelay::error_events(std::string_view path, int num_choices, http::ErrorShape shape,
                                   const std::string& message) const {
  using json = nlohmann::json;
  if (saw_done_) return "";
  if (shape == http::ErrorShape::kAnthropic) {
    // Anthropic's streams end with a named error event and have no [DONE].
    http::ApiError e = http::internal(message);
    e.status = 502;
    return "event: error\ndata: " + e.body(shape) + "\n\n";
  }
  std::string out;
  const bool chat = path == "/v1/chat/completions";
  const bool completions = path == "/v1/completions";
  if (chat || completions) {
    json last = json::parse(last_data_, nullptr, false);
    json chunk = json::object();
    chunk["id"] = "cmpl-router-error";
    chunk["object"] = chat ? "chat.completion.chunk" : "text_completion";
    chunk["created"] = 0;
    if (last.is_object()) {
      for (const char* key : {"id", "created", "model", "system_fingerprint"}) {
        auto it = last.find(key);
        if (it != last.end() && (it->is_string() || it->is_number_integer())) chunk[key] = *it;
      }
    }
    json choices = json::array();
    for (int i = 0; i < num_choices; ++i) {
      json c = {{"index", i}, {"finish_reason", "error"}, {"logprobs", nullptr}};
      if (chat) {
        c["delta"] = json::object();
      } else {
        c["text"] = "";
      }
      choices.push_back(std::move(c));
    }
    chunk["choices"] = std::move(choices);
    out += "data: " + chunk.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  }
  json error = {{"error",
                 {{"message", message},
                  {"type", "server_error"},
                  {"param", nullptr},
                  {"code", "upstream_stream_cut"}}}};
  out += "data: " + error.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
  out += "data: [DONE]\n\n";
  return out;
}

}  // namespace pagoda::router
