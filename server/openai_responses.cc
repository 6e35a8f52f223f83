#include "server/openai_responses.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

namespace pagoda::server {

using nlohmann::json;

namespace {

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

const json* find(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

ApiError unsupported(const std::string& what, const std::string& param) {
  ApiError e = bad_request(what + " is not supported by this server", param);
  e.code = "unsupported_field";
  return e;
}

// A string, or a list of {"type": "input_text" | "output_text", "text"} parts.
std::optional<ApiError> text_of(const json& v, const std::string& param, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return bad_request(param + " must be a string or a list of text parts", param);
  out.clear();
  for (size_t i = 0; i < v.size(); ++i) {
    const json& part = v[i];
    const std::string pparam = fmt::format("{}[{}]", param, i);
    const json* type = part.is_object() ? find(part, "type") : nullptr;
    if (!type || !type->is_string()) return bad_request(pparam + ".type must be a string", pparam);
    const std::string& t = type->get_ref<const std::string&>();
    if (t != "input_text" && t != "output_text") {
      return unsupported(fmt::format("{}: content of type '{}'", pparam, t.substr(0, 64)),
                         pparam + ".type");
    }
    const json* text = find(part, "text");
    if (!text || !text->is_string()) {
      return bad_request(pparam + ".text must be a string", pparam + ".text");
    }
    if (i > 0) out += '\n';
    out += text->get<std::string>();
  }
  return std::nullopt;
}

std::optional<ApiError> string_field(const json& obj, const char* name, const std::string& param,
                                     std::string& out) {
  const json* v = find(obj, name);
  if (!v || !v->is_string()) {
    return bad_request(fmt::format("{}.{} must be a string", param, name),
                       fmt::format("{}.{}", param, name));
  }
  out = v->get<std::string>();
  return std::nullopt;
}

// One input item -> chat messages (appended to `chat`).
std::optional<ApiError> translate_item(const json& item, size_t index, json& chat) {
  const std::string param = fmt::format("input[{}]", index);
  if (!item.is_object()) return bad_request(param + " must be an object", param);
  std::string type = "message";
  if (const json* t = find(item, "type")) {
    if (!t->is_string()) return bad_request(param + ".type must be a string", param + ".type");
    type = t->get<std::string>();
  }
  if (type == "message") {
    std::string role;
    if (auto e = string_field(item, "role", param, role)) return e;
    if (role == "developer") role = "system";
    if (role != "user" && role != "assistant" && role != "system") {
      return bad_request(param + ".role must be user, assistant, system or developer",
                         param + ".role");
    }
    const json* content = find(item, "content");
    if (!content) return bad_request(param + ".content is required", param + ".content");
    std::string text;
    if (auto e = text_of(*content, param + ".content", text)) return e;
    chat.push_back(json{{"role", role}, {"content", text}});
    return std::nullopt;
  }
  if (type == "function_call") {
    std::string call_id, name, arguments;
    if (auto e = string_field(item, "call_id", param, call_id)) return e;
    if (auto e = string_field(item, "name", param, name)) return e;
    if (auto e = string_field(item, "arguments", param, arguments)) return e;
    json call = {{"id", call_id},
                 {"type", "function"},
                 {"function", {{"name", name}, {"arguments", arguments}}}};
    // Calls right after an assistant message (or after other calls) belong to that turn.
    if (!chat.empty() && chat.back()["role"] == "assistant") {
      json& last = chat.back();
      if (!last.contains("tool_calls")) last["tool_calls"] = json::array();
      last["tool_calls"].push_back(std::move(call));
    } else {
      chat.push_back(
          json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}});
    }
    return std::nullopt;
  }
  if (type == "function_call_output") {
    std::string call_id, output;
    if (auto e = string_field(item, "call_id", param, call_id)) return e;
    const json* out = find(item, "output");
    if (!out) return bad_request(param + ".output is required", param + ".output");
    if (auto e = text_of(*out, param + ".output", output)) return e;
    chat.push_back(json{{"role", "tool"}, {"tool_call_id", call_id}, {"content", output}});
    return std::nullopt;
  }
  return unsupported(fmt::format("{}: items of type '{}'", param, type.substr(0, 64)),
                     param + ".type");
}

std::optional<ApiError> translate_tools(const json& body, json& chat) {
  if (const json* tools = find(body, "tools")) {
    if (!tools->is_array()) return bad_request("'tools' must be a list", "tools");
    json out = json::array();
    for (size_t i = 0; i < tools->size(); ++i) {
      const json& t = (*tools)[i];
      const std::string param = fmt::format("tools[{}]", i);
      if (!t.is_object()) return bad_request(param + " must be an object", param);
      std::string type, name;
      if (auto e = string_field(t, "type", param, type)) return e;
      if (type != "function") {
        return unsupported(fmt::format("{}: tools of type '{}'", param, type.substr(0, 64)),
                           param + ".type");
      }
      if (auto e = string_field(t, "name", param, name)) return e;
      for (const auto& [key, value] : t.items()) {
        if (key == "type" || key == "name" || key == "description" || key == "parameters" ||
            key == "strict" || value.is_null()) {
          continue;
        }
        const std::string shown = fmt::format("{}.{}", param, key.substr(0, 64));
        return unsupported("'" + shown + "'", shown);
      }
      json fn = {{"name", name}};
      for (const char* key : {"description", "parameters", "strict"}) {
        if (const json* v = find(t, key)) fn[key] = *v;
      }
      out.push_back(json{{"type", "function"}, {"function", std::move(fn)}});
    }
    chat["tools"] = std::move(out);
  }
  if (const json* choice = find(body, "tool_choice")) {
    if (choice->is_string()) {
      chat["tool_choice"] = *choice;  // none | auto | required (checked by the chat validator)
    } else {
      const json* type = choice->is_object() ? find(*choice, "type") : nullptr;
      const json* name = choice->is_object() ? find(*choice, "name") : nullptr;
      if (!type || *type != "function" || !name || !name->is_string()) {
        return bad_request(
            "'tool_choice' must be none, auto, required or {\"type\": \"function\", \"name\"}",
            "tool_choice");
      }
      chat["tool_choice"] = json{{"type", "function"}, {"function", {{"name", *name}}}};
    }
  }
  if (const json* p = find(body, "parallel_tool_calls")) chat["parallel_tool_calls"] = *p;
  return std::nullopt;
}

// text.format -> response_format.
std::optional<ApiError> translate_text(const json& body, json& chat) {
  const json* text = find(body, "text");
  if (!text) return std::nullopt;
  if (!text->is_object()) return bad_request("'text' must be an object", "text");
  for (const auto& [key, value] : text->items()) {
    if (key != "format" && !value.is_null())
      return unsupported("'text." + key.substr(0, 64) + "'", "text." + key.substr(0, 64));
  }
  const json* format = find(*text, "format");
  if (!format) return std::nullopt;
  const json* type = format->is_object() ? find(*format, "type") : nullptr;
  if (!type || !type->is_string()) {
    return bad_request("'text.format.type' must be text, json_object or json_schema",
                       "text.format.type");
  }
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return std::nullopt;
  if (t == "json_object") {
    chat["response_format"] = json{{"type", "json_object"}};
    return std::nullopt;
  }
  if (t == "json_schema") {
    json schema = json::object();
    for (const char* key : {"name", "schema", "strict", "description"}) {
      if (const json* v = find(*format, key)) schema[key] = *v;
    }
    if (!schema.contains("schema")) {
      return bad_request("'text.format.schema' is required", "text.format.schema");
    }
    chat["response_format"] = json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
    return std::nullopt;
  }
  return bad_request("'text.format.type' must be text, json_object or json_schema",
                     "text.format.type");
}

// Names the Responses field for an error the chat validator reported on the translated body.
ApiError renamed(ApiError e) {
  if (e.param == "max_tokens") e.param = "max_output_tokens";
  if (e.param == "response_format" || e.param.starts_with("response_format.")) {
    e.param = "text.format";
  }
  if (e.param.starts_with("messages")) e.param = "input";
  return e;
}

}  // namespace

std::optional<ApiError> responses_to_chat_request(const json& body, ResponseStore* store,
                                                  ResponsesRequest& out) {
  static constexpr std::string_view kKnown[] = {"model",
                                                "input",
                                                "instructions",
                                                "max_output_tokens",
                                                "temperature",
                                                "top_p",
                                                "tools",
                                                "tool_choice",
                                                "parallel_tool_calls",
                                                "text",
                                                "stream",
                                                "store",
                                                "previous_response_id",
                                                "metadata",
                                                "user",
                                                "truncation"};
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) != std::end(kKnown)) continue;
    if (value.is_null()) continue;
    return unsupported("'" + key.substr(0, 64) + "'", key.substr(0, 64));
  }
  json& chat = out.chat;
  chat = json::object();
  json echo = json::object();
  const json* model = find(body, "model");
  if (!model) return bad_request("'model' is required", "model");
  chat["model"] = *model;
  if (const json* v = find(body, "store")) {
    if (!v->is_boolean()) return bad_request("'store' must be a boolean", "store");
    out.store = v->get<bool>();
  }
  if (const json* v = find(body, "truncation"); v && *v != "disabled") {
    return unsupported("'truncation' other than \"disabled\"", "truncation");
  }
  if (const json* v = find(body, "metadata")) {
    if (!v->is_object() || v->size() > 16) {
      return bad_request("'metadata' must be an object of at most 16 strings", "metadata");
    }
    for (const auto& [key, value] : v->items()) {
      if (!value.is_string() || key.size() > 64 ||
          value.get_ref<const std::string&>().size() > 512) {
        return bad_request("'metadata' values must be strings (keys up to 64, values up to 512)",
                           "metadata");
      }
    }
    echo["metadata"] = *v;
  }
  // The conversation: a stored one first, then this input.
  out.conversation = json::array();
  if (const json* prev = find(body, "previous_response_id")) {
    if (!prev->is_string()) {
      return bad_request("'previous_response_id' must be a string", "previous_response_id");
    }
    std::optional<StoredResponse> stored;
    if (store) stored = store->get(prev->get<std::string>());
    if (!stored) {
      ApiError e = bad_request(fmt::format("Previous response with id '{}' not found.",
                                           prev->get<std::string>().substr(0, 128)),
                               "previous_response_id");
      e.code = "previous_response_not_found";
      return e;
    }
    out.conversation = json::parse(stored->conversation_json, nullptr, false);
    if (!out.conversation.is_array()) return internal("a stored conversation is corrupt");
    echo["previous_response_id"] = *prev;
  }
  const json* input = find(body, "input");
  if (!input) return bad_request("'input' is required", "input");
  if (input->is_string()) {
    out.conversation.push_back(json{{"role", "user"}, {"content", *input}});
  } else if (input->is_array() && !input->empty()) {
    for (size_t i = 0; i < input->size(); ++i) {
      if (auto e = translate_item((*input)[i], i, out.conversation)) return e;
    }
  } else {
    return bad_request("'input' must be a string or a non-empty list of items", "input");
  }
  json messages = json::array();
  if (const json* instructions = find(body, "instructions")) {
    if (!instructions->is_string()) {
      return bad_request("'instructions' must be a string", "instructions");
    }
    messages.push_back(json{{"role", "system"}, {"content", *instructions}});
    echo["instructions"] = *instructions;
  }
  for (const json& m : out.conversation)
    messages.push_back(m);
  chat["messages"] = std::move(messages);
  if (auto e = translate_tools(body, chat)) return e;
  if (auto e = translate_text(body, chat)) return e;
  if (const json* v = find(body, "max_output_tokens")) chat["max_tokens"] = *v;
  for (const char* key : {"temperature", "top_p", "stream", "user"}) {
    if (const json* v = find(body, key)) chat[key] = *v;
  }
  for (const char* key : {"max_output_tokens", "temperature", "top_p", "tools", "tool_choice",
                          "parallel_tool_calls", "text"}) {
    if (const json* v = find(body, key)) echo[key] = *v;
  }
  echo["store"] = out.store;
  out.echo = std::move(echo);
  return std::nullopt;
}

std::optional<ApiError> parse_responses_request(const std::string& body, const Engine& engine,
                                                const ServerConfig& config, ResponseStore& store,
                                                ResponsesRequest& out) {
  json j;
  if (auto e = parse_json_object(body, config.max_json_depth, j)) return e;
  out = ResponsesRequest();
  if (auto e = responses_to_chat_request(j, &store, out)) return e;
  // A stored conversation plus the new input may nest a little deeper than one body.
  ServerConfig inner = config;
  inner.max_json_depth = config.max_json_depth + 2;
  if (auto e = parse_generation_request(dump(out.chat), Endpoint::kChat, engine, inner, out.spec)) {
    return renamed(std::move(*e));
  }
  return std::nullopt;
}

namespace {

json message_item(const std::string& id, const std::string& text, const char* status) {
  return json{
      {"type", "message"},
      {"id", id},
      {"status", status},
      {"role", "assistant"},
      {"content", json::array({json{
                      {"type", "output_text"}, {"text", text}, {"annotations", json::array()}}})}};
}

json call_item(const std::string& call_id, const std::string& name, const std::string& arguments,
               const char* status) {
  return json{{"type", "function_call"}, {"id", "fc_" + call_id},
              {"call_id", call_id},      {"name", name},
              {"arguments", arguments},  {"status", status}};
}

json usage_json(const UsageTotals& u) {
  return json{{"input_tokens", u.prompt_tokens},
              {"input_tokens_details", {{"cached_tokens", u.cached_tokens}}},
              {"output_tokens", u.completion_tokens},
              {"output_tokens_details", {{"reasoning_tokens", 0}}},
              {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

const char* final_status(const ChoiceResult& c) {
  return c.finish_reason == FinishReason::kLength ? "incomplete" : "completed";
}

}  // namespace

ResponsesEncoder::ResponsesEncoder(std::string id, std::string model, int64_t created_at,
                                   ResponsesRequest& request, ResponseStore* store)
    : id_(std::move(id)),
      model_(std::move(model)),
      created_at_(created_at),
      conversation_(std::move(request.conversation)),
      echo_(std::move(request.echo)),
      store_(request.store ? store : nullptr) {}

json ResponsesEncoder::response_object(const std::string& status, const json& output,
                                       const ChoiceResult* finished, const json& usage) const {
  json r = {{"id", id_},
            {"object", "response"},
            {"created_at", created_at_},
            {"status", status},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"model", model_},
            {"output", output},
            {"usage", usage},
            {"instructions", nullptr},
            {"max_output_tokens", nullptr},
            {"temperature", 1.0},
            {"top_p", 1.0},
            {"tools", json::array()},
            {"tool_choice", "auto"},
            {"parallel_tool_calls", true},
            {"previous_response_id", nullptr},
            {"text", {{"format", {{"type", "text"}}}}},
            {"truncation", "disabled"},
            {"metadata", json::object()}};
  for (const auto& [key, value] : echo_.items())
    r[key] = value;
  if (finished && finished->finish_reason == FinishReason::kLength) {
    r["incomplete_details"] = json{{"reason", "max_output_tokens"}};
  }
  return r;
}

std::string ResponsesEncoder::event(const std::string& type, json data) {
  data["type"] = type;
  data["sequence_number"] = sequence_number_++;
  return fmt::format("event: {}\ndata: {}\n\n", type, dump(data));
}

void ResponsesEncoder::save(const json& response, const ChoiceResult& choice) {
  if (!store_) return;
  json conversation = conversation_;
  json assistant = {{"role", "assistant"},
                    {"content", choice.text.empty() ? json(nullptr) : json(choice.text)}};
  if (!choice.tool_calls.empty()) {
    json calls = json::array();
    for (const ToolCallResult& c : choice.tool_calls) {
      calls.push_back(json{{"id", c.id},
                           {"type", "function"},
                           {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    }
    assistant["tool_calls"] = std::move(calls);
  }
  conversation.push_back(std::move(assistant));
  store_->put(id_, StoredResponse{dump(response), dump(conversation)});
}

std::string ResponsesEncoder::stream_begin() {
  const json r = response_object("in_progress", json::array(), nullptr, nullptr);
  std::string events = event("response.created", json{{"response", r}});
  events += event("response.in_progress", json{{"response", r}});
  return events;
}

void ResponsesEncoder::close_item(std::string& events) {
  if (open_item_.is_null()) return;
  const int64_t index = static_cast<int64_t>(items_.size());
  const std::string item_id = open_item_["id"];
  json done;
  if (open_item_["type"] == "message") {
    events += event("response.output_text.done", json{{"item_id", item_id},
                                                      {"output_index", index},
                                                      {"content_index", 0},
                                                      {"text", open_text_}});
    events += event(
        "response.content_part.done",
        json{{"item_id", item_id},
             {"output_index", index},
             {"content_index", 0},
             {"part",
              {{"type", "output_text"}, {"text", open_text_}, {"annotations", json::array()}}}});
    done = message_item(item_id, open_text_, "completed");
  } else {
    events += event("response.function_call_arguments.done",
                    json{{"item_id", item_id}, {"output_index", index}, {"arguments", open_text_}});
    done = call_item(open_item_["call_id"], open_item_["name"], open_text_, "completed");
  }
  events += event("response.output_item.done", json{{"output_index", index}, {"item", done}});
  items_.push_back(std::move(done));
  open_item_ = nullptr;
  open_text_.clear();
  open_call_ = -1;
}

std::string ResponsesEncoder::stream_delta(const ParsedDelta& delta) {
  std::string events;
  if (!delta.content.empty()) {
    if (open_item_.is_null() || open_item_["type"] != "message") {
      close_item(events);
      json item = {{"type", "message"},
                   {"id", make_response_id("msg_")},
                   {"status", "in_progress"},
                   {"role", "assistant"},
                   {"content", json::array()}};
      const int64_t at = static_cast<int64_t>(items_.size());
      events += event("response.output_item.added", json{{"output_index", at}, {"item", item}});
      events += event(
          "response.content_part.added",
          json{{"item_id", item["id"]},
               {"output_index", at},
               {"content_index", 0},
               {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", json::array()}}}});
      open_item_ = std::move(item);
    }
    open_text_ += delta.content;
    events += event("response.output_text.delta",
                    json{{"item_id", open_item_["id"]},
                         {"output_index", static_cast<int64_t>(items_.size())},
                         {"content_index", 0},
                         {"delta", delta.content}});
  }
  for (const ToolCallDelta& call : delta.tool_calls) {
    if (open_item_.is_null() || open_item_["type"] != "function_call" || call.index != open_call_) {
      close_item(events);
      json item = call_item(call.id, call.name, "", "in_progress");
      events += event("response.output_item.added",
                      json{{"output_index", static_cast<int64_t>(items_.size())}, {"item", item}});
      open_item_ = std::move(item);
      open_call_ = call.index;
    }
    if (!call.arguments.empty()) {
      open_text_ += call.arguments;
      events += event("response.function_call_arguments.delta",
                      json{{"item_id", open_item_["id"]},
                           {"output_index", static_cast<int64_t>(items_.size())},
                           {"delta", call.arguments}});
    }
  }
  return events;
}

std::string ResponsesEncoder::stream_end(const ChoiceResult& choice, const UsageTotals& usage) {
  std::string events;
  close_item(events);
  const std::string status = final_status(choice);
  json r = response_object(status, items_, &choice, usage_json(usage));
  save(r, choice);
  events += event(status == "completed" ? "response.completed" : "response.incomplete",
                  json{{"response", std::move(r)}});
  return events;
}

std::string ResponsesEncoder::stream_error(const ApiError& error) {
  return event("error", json{{"code", error.code.empty() ? json(nullptr) : json(error.code)},
                             {"message", error.message},
                             {"param", error.param.empty() ? json(nullptr) : json(error.param)}});
}

std::string ResponsesEncoder::full_response(const ChoiceResult& choice, const UsageTotals& usage) {
  json output = json::array();
  if (!choice.text.empty()) {
    output.push_back(message_item(make_response_id("msg_"), choice.text, "completed"));
  }
  for (const ToolCallResult& c : choice.tool_calls)
    output.push_back(call_item(c.id, c.name, c.arguments, "completed"));
  json r = response_object(final_status(choice), output, &choice, usage_json(usage));
  save(r, choice);
  return dump(r);
}

}  // namespace pagoda::server
