#include "router/prefix_affinity.h"

#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "base/hash.h"

namespace pagoda::router {

namespace {

void append_limited(std::string& out, std::string_view s, size_t limit) {
  if (out.size() >= limit) return;
  out.append(s.substr(0, limit - out.size()));
}

void append_content(std::string& out, const nlohmann::json& content, size_t limit) {
  if (content.is_string()) {
    append_limited(out, content.get_ref<const std::string&>(), limit);
  } else if (content.is_array()) {  // [{"type": "text", "text": ...}, ...]
    for (const auto& part : content) {
      if (out.size() >= limit) return;
      if (!part.is_object()) continue;
      auto text = part.find("text");
      if (text != part.end() && text->is_string()) {
        append_limited(out, text->get_ref<const std::string&>(), limit);
      }
    }
  }
}

}  // namespace

std::optional<uint64_t> affinity_key(const nlohmann::json& body, size_t prefix_chars) {
  if (!body.is_object() || prefix_chars == 0) return std::nullopt;
  std::string text;
  auto messages = body.find("messages");
  auto prompt = body.find("prompt");
  if (messages != body.end() && messages->is_array()) {
    // The stable prefix of a conversation: the leading system/developer messages, then the first
    // other message unless it is the newest turn (which differs on every request); a lone
    // message is its own prefix.
    size_t end = 0;
    auto role_of = [&](size_t i) -> std::string_view {
      const auto& m = (*messages)[i];
      if (!m.is_object()) return "";
      auto role = m.find("role");
      if (role == m.end() || !role->is_string()) return "";
      return std::string_view(role->get_ref<const std::string&>());
    };
    while (end < messages->size() && (role_of(end) == "system" || role_of(end) == "developer")) {
      ++end;
    }
    if (end + 1 < messages->size() || (end == 0 && !messages->empty())) ++end;
    for (size_t i = 0; i < end && text.size() < prefix_chars; ++i) {
      const auto& m = (*messages)[i];
      if (!m.is_object()) continue;
      append_limited(text, role_of(i), prefix_chars);
      append_limited(text, "\n", prefix_chars);
      auto content = m.find("content");
      if (content != m.end()) append_content(text, *content, prefix_chars);
      append_limited(text, "\n", prefix_chars);
    }
  } else if (prompt != body.end()) {
    if (prompt->is_string()) {
      append_limited(text, prompt->get_ref<const std::string&>(), prefix_chars);
    } else if (prompt->is_array() && !prompt->empty() && (*prompt)[0].is_string()) {
      append_limited(text, (*prompt)[0].get_ref<const std::string&>(), prefix_chars);
    }
  }
  if (text.empty()) return std::nullopt;
  return xxh3_128(text).low;
}

uint64_t rendezvous_score(uint64_t key, std::string_view backend) {
  std::string bytes(sizeof key, '\0');
  std::memcpy(bytes.data(), &key, sizeof key);
  bytes.append(backend);
  return xxh3_128(bytes).low;
}

}  // namespace pagoda::router
