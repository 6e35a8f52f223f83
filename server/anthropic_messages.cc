#include "server/anthropic_messages.h"

#include <algorithm>
#include <span>
#include <string_view>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pagoda::server {

using nlohmann::json;

namespace {

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// "event: <type>\ndata: <json>\n\n": Anthropic's SDKs dispatch on the event name.
std::string event(std::string_view type, const json& data) {
  return fmt::format("event: {}\ndata: {}\n\n", type, dump(data));
}

// A key of `obj` outside `known` is refused by name (`prefix` is the object's path: "tools[0].").
std::optional<ApiError> check_fields(const json& obj, std::span<const std::string_view> known,
                                     std::string_view prefix = "") {
  for (const auto& [key, value] : obj.items()) {
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string shown = fmt::format("{}{}", prefix, key.substr(0, 64));
    ApiError e = bad_request(fmt::format("'{}': unknown or unsupported field", shown), shown);
    e.code = "unsupported_field";
    return e;
  }
  return std::nullopt;
}

// The keys each content block and tool may carry. `cache_control` is accepted everywhere: it
// asks for prompt caching, which the engine's automatic prefix cache does without being asked.
constexpr std::string_view kTextBlockKeys[] = {"type", "text", "cache_control"};
constexpr std::string_view kToolUseKeys[] = {"type", "id", "name", "input", "cache_control"};
constexpr std::string_view kToolResultKeys[] = {"type", "tool_use_id", "content", "is_error",
                                                "cache_control"};
constexpr std::string_view kToolKeys[] = {"type", "name", "description", "input_schema",
                                          "cache_control"};
constexpr std::string_view kMessageKeys[] = {"role", "content"};

const json* find(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

// A string, or a list of {"type": "text", "text"} blocks (joined with newlines).
std::optional<ApiError> text_of(const json& v, const std::string& param, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array())
    return bad_request(param + " must be a string or a list of text blocks", param);
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const json& b = v[i];
    const std::string bparam = fmt::format("{}[{}]", param, i);
    const json* type = b.is_object() ? find(b, "type") : nullptr;
    const json* text = b.is_object() ? find(b, "text") : nullptr;
    if (!type || !type->is_string()) return bad_request(bparam + ".type must be a string", bparam);
    if (type->get<std::string>() != "text") {
      return from_status(unimplemented("{}: only text blocks are supported here, got '{}'", bparam,
                                       type->get<std::string>().substr(0, 64)),
                         bparam + ".type");
    }
    if (auto e = check_fields(b, kTextBlockKeys, bparam + ".")) return e;
    if (!text || !text->is_string()) {
      return bad_request(bparam + ".text must be a string", bparam + ".text");
    }
    if (i > 0) out += '\n';
    out += text->get<std::string>();
  }
  return std::nullopt;
}

// One Anthropic message -> chat messages: a user message's tool_result blocks become tool
// messages (before its text), an assistant message's tool_use blocks its tool_calls.
std::optional<ApiError> translate_message(const json& m, size_t index, json& chat) {
  const std::string param = fmt::format("messages[{}]", index);
  if (!m.is_object()) return bad_request(param + " must be an object", param);
  if (auto e = check_fields(m, kMessageKeys, param + ".")) return e;
  const json* role = find(m, "role");
  if (!role || !role->is_string() ||
      (role->get<std::string>() != "user" && role->get<std::string>() != "assistant")) {
    return bad_request(param + ".role must be \"user\" or \"assistant\"", param + ".role");
  }
  const bool user = role->get<std::string>() == "user";
  const json* content = find(m, "content");
  if (!content) return bad_request(param + ".content is required", param + ".content");
  if (content->is_string()) {
    chat.push_back(json{{"role", *role}, {"content", *content}});
    return std::nullopt;
  }
  if (!content->is_array()) {
    return bad_request(param + ".content must be a string or a list of content blocks",
                       param + ".content");
  }
  std::string text;
  bool has_text = false;
  json tool_calls = json::array();
  for (size_t j = 0; j < content->size(); ++j) {
    const json& b = (*content)[j];
    const std::string bparam = fmt::format("{}.content[{}]", param, j);
    const json* type = b.is_object() ? find(b, "type") : nullptr;
    if (!type || !type->is_string()) {
      return bad_request(bparam + " must be a content block with a string 'type'", bparam);
    }
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "text") {
      if (auto e = check_fields(b, kTextBlockKeys, bparam + ".")) return e;
      const json* s = find(b, "text");
      if (!s || !s->is_string()) {
        return bad_request(bparam + ".text must be a string", bparam + ".text");
      }
      if (has_text) text += '\n';
      text += s->get<std::string>();
      has_text = true;
    } else if (t == "tool_use" && !user) {
      if (auto e = check_fields(b, kToolUseKeys, bparam + ".")) return e;
      const json* id = find(b, "id");
      const json* name = find(b, "name");
      const json* input = find(b, "input");
      if (!id || !id->is_string() || !name || !name->is_string() || !input || !input->is_object()) {
        return bad_request(
            bparam + " must be {\"type\": \"tool_use\", \"id\", \"name\", \"input\": {}}", bparam);
      }
      tool_calls.push_back(json{{"id", *id},
                                {"type", "function"},
                                {"function", {{"name", *name}, {"arguments", dump(*input)}}}});
    } else if (t == "tool_result" && user) {
      if (auto e = check_fields(b, kToolResultKeys, bparam + ".")) return e;
      const json* id = find(b, "tool_use_id");
      if (!id || !id->is_string()) {
        return bad_request(bparam + ".tool_use_id must be a string", bparam + ".tool_use_id");
      }
      std::string result;
      if (const json* c = find(b, "content")) {
        if (auto e = text_of(*c, bparam + ".content", result)) return e;
      }
      if (const json* err = find(b, "is_error"); err && !err->is_boolean()) {
        return bad_request(bparam + ".is_error must be a boolean", bparam + ".is_error");
      }
      chat.push_back(json{{"role", "tool"}, {"tool_call_id", *id}, {"content", result}});
    } else {
      return from_status(unimplemented("{}: content blocks of type '{}' are not supported in {} "
                                       "messages",
                                       bparam, t.substr(0, 64), user ? "user" : "assistant"),
                         bparam + ".type");
    }
  }
  if (user) {
    if (has_text || content->empty()) chat.push_back(json{{"role", "user"}, {"content", text}});
  } else {
    json a = {{"role", "assistant"}, {"content", has_text ? json(text) : json(nullptr)}};
    if (!tool_calls.empty()) a["tool_calls"] = std::move(tool_calls);
    chat.push_back(std::move(a));
  }
  return std::nullopt;
}

std::optional<ApiError> translate_tools(const json& body, json& chat) {
  if (const json* tools = find(body, "tools")) {
    if (!tools->is_array()) return bad_request("'tools' must be a list", "tools");
    json out = json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string param = fmt::format("tools[{}]", i);
      if (!t.is_object()) return bad_request(param + " must be an object", param);
      if (const json* type = find(t, "type"); type && *type != "custom") {
        return from_status(
            unimplemented("{}: only client tools (type \"custom\") are supported", param),
            param + ".type");
      }
      if (auto e = check_fields(t, kToolKeys, param + ".")) return e;
      const json* name = find(t, "name");
      const json* schema = find(t, "input_schema");
      if (!name || !name->is_string()) {
        return bad_request(param + ".name must be a string", param + ".name");
      }
      if (!schema || !schema->is_object()) {
        return bad_request(param + ".input_schema must be a JSON Schema object",
                           param + ".input_schema");
      }
      json fn = {{"name", *name}, {"parameters", *schema}};
      if (const json* d = find(t, "description")) {
        if (!d->is_string()) {
          return bad_request(param + ".description must be a string", param + ".description");
        }
        fn["description"] = *d;
      }
      out.push_back(json{{"type", "function"}, {"function", std::move(fn)}});
    }
    chat["tools"] = std::move(out);
  }
  if (const json* choice = find(body, "tool_choice")) {
    const json* type = choice->is_object() ? find(*choice, "type") : nullptr;
    if (!type || !type->is_string()) {
      return bad_request(
          "'tool_choice' must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}",
          "tool_choice");
    }
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "auto") {
      chat["tool_choice"] = "auto";
    } else if (t == "any") {
      chat["tool_choice"] = "required";
    } else if (t == "none") {
      chat["tool_choice"] = "none";
    } else if (t == "tool") {
      const json* name = find(*choice, "name");
      if (!name || !name->is_string()) {
        return bad_request("'tool_choice.name' must be a string", "tool_choice.name");
      }
      chat["tool_choice"] = json{{"type", "function"}, {"function", {{"name", *name}}}};
    } else {
      return bad_request("'tool_choice.type' must be auto, any, tool or none", "tool_choice.type");
    }
    if (const json* d = find(*choice, "disable_parallel_tool_use")) {
      if (!d->is_boolean()) {
        return bad_request("'tool_choice.disable_parallel_tool_use' must be a boolean",
                           "tool_choice.disable_parallel_tool_use");
      }
      if (chat.contains("tools")) chat["parallel_tool_calls"] = !d->get<bool>();
    }
  }
  return std::nullopt;
}

// Names the Anthropic field for an error the chat validator reported on the translated body.
ApiError renamed(ApiError e) {
  if (e.param == "stop") e.param = "stop_sequences";
  if (e.message.starts_with("'stop'")) e.message = "'stop_sequences'" + e.message.substr(6);
  return e;
}

}  // namespace

std::optional<ApiError> messages_to_chat_request(const json& body, bool count_tokens, json& chat) {
  static constexpr std::string_view kCreate[] = {
      "model", "messages", "max_tokens", "system",      "stop_sequences", "temperature",
      "top_p", "top_k",    "tools",      "tool_choice", "metadata",       "stream"};
  static constexpr std::string_view kCount[] = {"model", "messages", "system", "tools",
                                                "tool_choice"};
  if (auto e = count_tokens ? check_fields(body, kCount) : check_fields(body, kCreate)) return e;
  chat = json::object();
  const json* model = find(body, "model");
  if (!model) return bad_request("'model' is required", "model");
  chat["model"] = *model;
  json messages = json::array();
  if (const json* system = find(body, "system")) {
    std::string text;
    if (auto e = text_of(*system, "system", text)) return e;
    messages.push_back(json{{"role", "system"}, {"content", text}});
  }
  const json* in = find(body, "messages");
  if (!in) return bad_request("'messages' is required", "messages");
  if (!in->is_array() || in->empty()) {
    return bad_request("'messages' must be a non-empty list", "messages");
  }
  for (size_t i = 0; i < in->size(); ++i) {
    if (auto e = translate_message((*in)[i], i, messages)) return e;
  }
  chat["messages"] = std::move(messages);
  if (auto e = translate_tools(body, chat)) return e;
  if (count_tokens) return std::nullopt;

  const json* max_tokens = find(body, "max_tokens");
  if (!max_tokens) return bad_request("'max_tokens' is required", "max_tokens");
  chat["max_tokens"] = *max_tokens;
  if (const json* stop = find(body, "stop_sequences")) {
    if (!stop->is_array()) {
      return bad_request("'stop_sequences' must be a list of strings", "stop_sequences");
    }
    chat["stop"] = *stop;
  }
  if (const json* t = find(body, "temperature")) {
    // Anthropic's range is [0, 1].
    if (!t->is_number() || t->get<double>() < 0.0 || t->get<double>() > 1.0) {
      return bad_request("'temperature' must be a number in [0, 1]", "temperature");
    }
    chat["temperature"] = *t;
  }
  for (const char* name : {"top_p", "top_k", "stream"}) {
    if (const json* v = find(body, name)) chat[name] = *v;
  }
  if (const json* metadata = find(body, "metadata")) {
    // Accepted: {"user_id"} identifies the caller's end user; it does not change generation.
    if (!metadata->is_object()) return bad_request("'metadata' must be an object", "metadata");
    if (const json* user = find(*metadata, "user_id"); user && !user->is_string()) {
      return bad_request("'metadata.user_id' must be a string", "metadata.user_id");
    }
  }
  return std::nullopt;
}

namespace {

std::optional<ApiError> parse_translated(const std::string& body, const ServerConfig& config,
                                         bool count_tokens, const Engine& engine,
                                         GenerationSpec& out) {
  json j;
  if (auto e = parse_json_object(body, config.max_json_depth, j)) return e;
  json chat;
  if (auto e = messages_to_chat_request(j, count_tokens, chat)) return e;
  if (count_tokens) chat["max_tokens"] = 1;
  // The translation nests tool schemas one level deeper than they came.
  ServerConfig inner = config;
  inner.max_json_depth = config.max_json_depth + 2;
  if (auto e = parse_generation_request(dump(chat), Endpoint::kChat, engine, inner, out)) {
    return renamed(std::move(*e));
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_messages_request(const std::string& body, const Engine& engine,
                                               const ServerConfig& config, GenerationSpec& out) {
  return parse_translated(body, config, /*count_tokens=*/false, engine, out);
}

std::optional<ApiError> count_message_tokens(const std::string& body, const Engine& engine,
                                             const ServerConfig& config, int64_t& num_tokens) {
  GenerationSpec spec;
  if (auto e = parse_translated(body, config, /*count_tokens=*/true, engine, spec)) {
    // A prompt that fills the context leaves no room for a token: still countable.
    if (e->param != "max_tokens" || spec.prompts.empty()) return e;
  }
  num_tokens = static_cast<int64_t>(spec.prompts.front().tokens.size());
  return std::nullopt;
}

std::string anthropic_stop_reason(const ChoiceResult& choice, std::string& stop_sequence) {
  stop_sequence.clear();
  if (choice.finish_reason == FinishReason::kLength) return "max_tokens";
  if (!choice.tool_calls.empty()) return "tool_use";
  if (choice.finish_reason == FinishReason::kStop && !choice.stop_reason.empty()) {
    stop_sequence = choice.stop_reason;
    return "stop_sequence";
  }
  return "end_turn";
}

namespace {

// A tool call's arguments as the object Anthropic's `input` is ({} when they are not one).
json tool_input(const std::string& arguments) {
  json input = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return input.is_object() ? input : json::object();
}

json usage_json(const UsageTotals& usage) {
  return json{{"input_tokens", usage.prompt_tokens - usage.cached_tokens},
              {"cache_creation_input_tokens", 0},
              {"cache_read_input_tokens", usage.cached_tokens},
              {"output_tokens", usage.completion_tokens}};
}

}  // namespace

void AnthropicMessageEncoder::close_block(std::string& events) {
  if (open_ == Block::kNone) return;
  events +=
      event("content_block_stop", json{{"type", "content_block_stop"}, {"index", block_index_}});
  open_ = Block::kNone;
}

void AnthropicMessageEncoder::open_block(Block kind, const json& content_block,
                                         std::string& events) {
  close_block(events);
  ++block_index_;
  open_ = kind;
  events += event("content_block_start", json{{"type", "content_block_start"},
                                              {"index", block_index_},
                                              {"content_block", content_block}});
  if (!pinged_) {
    pinged_ = true;
    events += event("ping", json{{"type", "ping"}});
  }
}

std::string AnthropicMessageEncoder::stream_begin() {
  json message = {{"id", id_},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", model_},
                  {"content", json::array()},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr},
                  {"usage",
                   {{"input_tokens", input_tokens_},
                    {"cache_creation_input_tokens", 0},
                    {"cache_read_input_tokens", 0},
                    {"output_tokens", 0}}}};
  return event("message_start", json{{"type", "message_start"}, {"message", std::move(message)}});
}

std::string AnthropicMessageEncoder::stream_delta(const ParsedDelta& delta) {
  std::string events;
  if (!delta.content.empty()) {
    if (open_ != Block::kText)
      open_block(Block::kText, json{{"type", "text"}, {"text", ""}}, events);
    events += event("content_block_delta",
                    json{{"type", "content_block_delta"},
                         {"index", block_index_},
                         {"delta", {{"type", "text_delta"}, {"text", delta.content}}}});
  }
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (open_ != Block::kToolUse || call.index != tool_call_) {
      open_block(Block::kToolUse,
                 json{{"type", "tool_use"},
                      {"id", call.id},
                      {"name", call.name},
                      {"input", json::object()}},
                 events);
      tool_call_ = call.index;
    }
    if (!call.arguments.empty()) {
      events +=
          event("content_block_delta",
                json{{"type", "content_block_delta"},
                     {"index", block_index_},
                     {"delta", {{"type", "input_json_delta"}, {"partial_json", call.arguments}}}});
    }
  }
  return events;
}

std::string AnthropicMessageEncoder::stream_end(const ChoiceResult& choice,
                                                const UsageTotals& usage) {
  std::string events;
  close_block(events);
  if (!pinged_) {
    pinged_ = true;
    events += event("ping", json{{"type", "ping"}});
  }
  std::string stop_sequence;
  const std::string reason = anthropic_stop_reason(choice, stop_sequence);
  events +=
      event("message_delta",
            json{{"type", "message_delta"},
                 {"delta",
                  {{"stop_reason", reason},
                   {"stop_sequence", stop_sequence.empty() ? json(nullptr) : json(stop_sequence)}}},
                 {"usage", usage_json(usage)}});
  events += event("message_stop", json{{"type", "message_stop"}});
  return events;
}

std::string AnthropicMessageEncoder::stream_error(const ApiError& error) {
  return event("error", json::parse(error.body(ErrorShape::kAnthropic)));
}

std::string AnthropicMessageEncoder::full_response(const ChoiceResult& choice,
                                                   const UsageTotals& usage) {
  json content = json::array();
  if (!choice.text.empty()) content.push_back(json{{"type", "text"}, {"text", choice.text}});
  for (const ToolCallResult& call : choice.tool_calls) {
    content.push_back(json{{"type", "tool_use"},
                           {"id", call.id},
                           {"name", call.name},
                           {"input", tool_input(call.arguments)}});
  }
  std::string stop_sequence;
  const std::string reason = anthropic_stop_reason(choice, stop_sequence);
  return dump(json{{"id", id_},
                   {"type", "message"},
                   {"role", "assistant"},
                   {"model", model_},
                   {"content", std::move(content)},
                   {"stop_reason", reason},
                   {"stop_sequence", stop_sequence.empty() ? json(nullptr) : json(stop_sequence)},
                   {"usage", usage_json(usage)}});
}

}  // namespace pagoda::server
