#include "server/openai_constraints.h"

#include <initializer_list>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace pagoda::server {

using nlohmann::json;

namespace {

constexpr size_t kMaxChoices = 4096;
constexpr size_t kMaxTools = 128;

std::string shorten(const std::string& s) {
  return s.size() <= 64 ? s : s.substr(0, 64) + "...";
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

const json* member(const json& obj, const char* name) {
  const auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// Refuses a key of `obj` not in `allowed`, naming it as param.key.
std::optional<ApiError> only_keys(const json& obj, std::initializer_list<std::string_view> allowed,
                                  const std::string& param) {
  for (const auto& [key, value] : obj.items()) {
    bool ok = false;
    for (std::string_view a : allowed)
      ok = ok || key == a;
    if (!ok) {
      return bad_request(fmt::format("'{}.{}' is not a supported field", param, shorten(key)),
                         param + "." + shorten(key));
    }
  }
  return std::nullopt;
}

// A JSON Schema given as an object (or, for vLLM's guided_json, a string holding one).
std::optional<ApiError> schema_text(const json& v, const std::string& param, std::string& out) {
  if (v.is_object() || v.is_boolean()) {
    out = dump(v);
    return std::nullopt;
  }
  if (v.is_string()) {
    out = v.get<std::string>();
    return std::nullopt;
  }
  return bad_request(fmt::format("'{}' must be a JSON Schema object", param), param);
}

std::optional<ApiError> choices_of(const json& v, const std::string& param,
                                   std::vector<std::string>& out) {
  if (!v.is_array() || v.empty() || v.size() > kMaxChoices) {
    return bad_request(fmt::format("'{}' must be a list of 1 to {} strings", param, kMaxChoices),
                       param);
  }
  for (const json& c : v) {
    if (!c.is_string()) return bad_request(fmt::format("'{}' must list strings", param), param);
    out.push_back(c.get<std::string>());
  }
  return std::nullopt;
}

// One constraint source of the request; `set` refuses a second one.
class Sources {
 public:
  explicit Sources(StructuredOutputs& out) : out_(out) {}

  std::optional<ApiError> set(const std::string& param, StructuredOutputs::Kind kind,
                              std::string spec = {}, std::vector<std::string> choices = {}) {
    if (!first_.empty()) {
      return bad_request(
          fmt::format("'{}' and '{}' both constrain the output; give only one", first_, param),
          param);
    }
    first_ = param;
    out_.kind = kind;
    out_.spec = std::move(spec);
    out_.choices = std::move(choices);
    return std::nullopt;
  }

 private:
  StructuredOutputs& out_;
  std::string first_;
};

std::optional<ApiError> parse_response_format(const json& rf, Sources& sources) {
  const std::string param = "response_format";
  if (!rf.is_object()) return bad_request("'response_format' must be an object", param);
  const json* type = member(rf, "type");
  if (type == nullptr || !type->is_string()) {
    return bad_request(
        "'response_format.type' must be \"text\", \"json_object\" or "
        "\"json_schema\"",
        param + ".type");
  }
  const std::string t = type->get<std::string>();
  if (t == "text") return only_keys(rf, {"type"}, param);
  if (t == "json_object") {
    // llama.cpp also takes {"type": "json_object", "schema": {...}}.
    if (auto e = only_keys(rf, {"type", "schema"}, param)) return e;
    if (const json* schema = member(rf, "schema")) {
      std::string text;
      if (auto e = schema_text(*schema, param + ".schema", text)) return e;
      return sources.set(param, StructuredOutputs::Kind::kJsonSchema, std::move(text));
    }
    return sources.set(param, StructuredOutputs::Kind::kJsonObject);
  }
  if (t == "json_schema") {
    if (auto e = only_keys(rf, {"type", "json_schema"}, param)) return e;
    const json* js = member(rf, "json_schema");
    const std::string jparam = param + ".json_schema";
    if (js == nullptr || !js->is_object()) {
      return bad_request(fmt::format("'{}' must be an object with 'name' and 'schema'", jparam),
                         jparam);
    }
    if (auto e = only_keys(*js, {"name", "description", "schema", "strict"}, jparam)) return e;
    const json* name = member(*js, "name");
    if (name != nullptr && !name->is_string()) {
      return bad_request(fmt::format("'{}.name' must be a string", jparam), jparam + ".name");
    }
    if (const json* strict = member(*js, "strict"); strict != nullptr && !strict->is_boolean()) {
      return bad_request(fmt::format("'{}.strict' must be a boolean", jparam), jparam + ".strict");
    }
    const json* schema = member(*js, "schema");
    // No schema: any JSON object (OpenAI's default for a schema-less json_schema).
    if (schema == nullptr) return sources.set(param, StructuredOutputs::Kind::kJsonObject);
    std::string text;
    if (auto e = schema_text(*schema, jparam + ".schema", text)) return e;
    return sources.set(param, StructuredOutputs::Kind::kJsonSchema, std::move(text));
  }
  return bad_request(fmt::format("response_format type '{}' is not supported (text, json_object, "
                                 "json_schema)",
                                 shorten(t)),
                     param + ".type");
}

std::optional<ApiError> string_field(const json& v, const std::string& param, std::string& out) {
  if (!v.is_string() || v.get_ref<const std::string&>().empty()) {
    return bad_request(fmt::format("'{}' must be a non-empty string", param), param);
  }
  out = v.get<std::string>();
  return std::nullopt;
}

// vLLM's guided_* members: top-level "guided_<name>" fields, or "<name>" inside
// structured_outputs (nested).
std::optional<ApiError> parse_guided(const json& obj, bool nested, Sources& sources) {
  using Kind = StructuredOutputs::Kind;
  const auto key = [&](const char* name) {
    return nested ? std::string(name) : std::string("guided_") + name;
  };
  const auto param = [&](const char* name) {
    return nested ? std::string("structured_outputs.") + name : std::string("guided_") + name;
  };
  if (const json* v = member(obj, key("json").c_str())) {
    std::string text;
    if (auto e = schema_text(*v, param("json"), text)) return e;
    if (auto e = sources.set(param("json"), Kind::kJsonSchema, std::move(text))) return e;
  }
  if (const json* v = member(obj, key("regex").c_str())) {
    std::string text;
    if (auto e = string_field(*v, param("regex"), text)) return e;
    if (auto e = sources.set(param("regex"), Kind::kRegex, std::move(text))) return e;
  }
  if (const json* v = member(obj, key("grammar").c_str())) {
    std::string text;
    if (auto e = string_field(*v, param("grammar"), text)) return e;
    if (auto e = sources.set(param("grammar"), Kind::kGrammar, std::move(text))) return e;
  }
  if (const json* v = member(obj, key("choice").c_str())) {
    std::vector<std::string> choices;
    if (auto e = choices_of(*v, param("choice"), choices)) return e;
    if (auto e = sources.set(param("choice"), Kind::kChoice, {}, std::move(choices))) return e;
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_structured_outputs(const json& body, StructuredOutputs& out) {
  out = StructuredOutputs();
  Sources sources(out);
  if (const json* rf = member(body, "response_format")) {
    if (auto e = parse_response_format(*rf, sources)) return e;
  }
  if (auto e = parse_guided(body, /*nested=*/false, sources)) return e;
  if (const json* so = member(body, "structured_outputs")) {
    const std::string param = "structured_outputs";
    if (!so->is_object()) return bad_request("'structured_outputs' must be an object", param);
    if (auto e = only_keys(*so, {"json", "regex", "grammar", "choice", "json_object"}, param))
      return e;
    size_t members = 0;
    for (const auto& [key, value] : so->items())
      members += value.is_null() ? 0 : 1;
    if (members > 1) {
      return bad_request(
          "'structured_outputs' must set exactly one of json, regex, grammar, "
          "choice, json_object",
          param);
    }
    if (const json* jo = member(*so, "json_object")) {
      if (!jo->is_boolean()) {
        return bad_request("'structured_outputs.json_object' must be a boolean",
                           param + ".json_object");
      }
      if (jo->get<bool>()) {
        if (auto e = sources.set(param + ".json_object", StructuredOutputs::Kind::kJsonObject))
          return e;
      }
    }
    if (auto e = parse_guided(*so, /*nested=*/true, sources)) return e;
  }
  // llama.cpp's fields.
  if (const json* g = member(body, "grammar")) {
    std::string text;
    if (auto e = string_field(*g, "grammar", text)) return e;
    if (auto e = sources.set("grammar", StructuredOutputs::Kind::kGrammar, std::move(text)))
      return e;
  }
  if (const json* js = member(body, "json_schema")) {
    std::string text;
    if (auto e = schema_text(*js, "json_schema", text)) return e;
    if (auto e = sources.set("json_schema", StructuredOutputs::Kind::kJsonSchema, std::move(text)))
      return e;
  }
  return std::nullopt;
}

namespace {

bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

std::optional<ApiError> parse_tools(const json& body, ToolCallFormat format, ToolRequest& out) {
  out = ToolRequest();
  const json* tools = member(body, "tools");
  const json* choice = member(body, "tool_choice");
  const json* parallel = member(body, "parallel_tool_calls");
  bool parallel_calls = true;
  if (parallel != nullptr) {
    if (!parallel->is_boolean()) {
      return bad_request("'parallel_tool_calls' must be a boolean", "parallel_tool_calls");
    }
    parallel_calls = parallel->get<bool>();
  }
  if (tools == nullptr) {
    if (choice != nullptr && !(choice->is_string() && choice->get<std::string>() == "none")) {
      return bad_request("'tool_choice' is only allowed when 'tools' are given", "tool_choice");
    }
    return std::nullopt;
  }
  if (!tools->is_array()) return bad_request("'tools' must be a list", "tools");
  if (tools->size() > kMaxTools) {
    return bad_request(
        fmt::format("'tools' lists {} tools; at most {} are allowed", tools->size(), kMaxTools),
        "tools");
  }
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& tool = (*tools)[i];
    const std::string param = fmt::format("tools[{}]", i);
    if (!tool.is_object()) return bad_request(fmt::format("'{}' must be an object", param), param);
    if (auto e = only_keys(tool, {"type", "function"}, param)) return e;
    const json* type = member(tool, "type");
    if (type == nullptr || !type->is_string() || type->get<std::string>() != "function") {
      return bad_request(fmt::format("'{}.type' must be \"function\"", param), param + ".type");
    }
    const json* fn = member(tool, "function");
    const std::string fparam = param + ".function";
    if (fn == nullptr || !fn->is_object()) {
      return bad_request(fmt::format("'{}' must be an object", fparam), fparam);
    }
    if (auto e = only_keys(*fn, {"name", "description", "parameters", "strict"}, fparam)) return e;
    const json* name = member(*fn, "name");
    if (name == nullptr || !name->is_string() || !valid_function_name(name->get<std::string>())) {
      return bad_request(
          fmt::format("'{}.name' must be 1 to 64 of a-z, A-Z, 0-9, _, - and .", fparam),
          fparam + ".name");
    }
    if (!names.insert(name->get<std::string>()).second) {
      return bad_request(fmt::format("'{}.name' repeats the name of an earlier tool", fparam),
                         fparam + ".name");
    }
    if (const json* d = member(*fn, "description"); d != nullptr && !d->is_string()) {
      return bad_request(fmt::format("'{}.description' must be a string", fparam),
                         fparam + ".description");
    }
    if (const json* p = member(*fn, "parameters"); p != nullptr && !p->is_object()) {
      return bad_request(fmt::format("'{}.parameters' must be a JSON Schema object", fparam),
                         fparam + ".parameters");
    }
    if (const json* s = member(*fn, "strict"); s != nullptr && !s->is_boolean()) {
      return bad_request(fmt::format("'{}.strict' must be a boolean", fparam), fparam + ".strict");
    }
  }
  std::string mode = "auto";
  std::string named;
  if (choice != nullptr) {
    if (choice->is_string()) {
      mode = choice->get<std::string>();
      if (mode != "none" && mode != "auto" && mode != "required") {
        return bad_request(
            fmt::format("'tool_choice' must be \"none\", \"auto\", \"required\" or "
                        "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}, "
                        "got \"{}\"",
                        shorten(mode)),
            "tool_choice");
      }
    } else if (choice->is_object()) {
      if (auto e = only_keys(*choice, {"type", "function"}, "tool_choice")) return e;
      const json* type = member(*choice, "type");
      const json* fn = member(*choice, "function");
      const json* name = fn != nullptr && fn->is_object() ? member(*fn, "name") : nullptr;
      if (type == nullptr || !type->is_string() || type->get<std::string>() != "function" ||
          name == nullptr || !name->is_string()) {
        return bad_request(
            "'tool_choice' must be {\"type\": \"function\", \"function\": "
            "{\"name\": ...}}",
            "tool_choice");
      }
      named = name->get<std::string>();
      if (names.count(named) == 0) {
        return bad_request(fmt::format("'tool_choice' names the function '{}', which is not in "
                                       "'tools'",
                                       shorten(named)),
                           "tool_choice.function.name");
      }
      mode = "named";
    } else {
      return bad_request("'tool_choice' must be a string or an object", "tool_choice");
    }
  }
  if (mode == "none" || tools->empty()) {
    if (mode == "required" || mode == "named") {
      return bad_request("'tool_choice' requires a tool call but 'tools' is empty", "tool_choice");
    }
    return std::nullopt;  // the tools are not shown to the model, nothing is parsed
  }
  out.tools_json = dump(*tools);
  out.format = format;
  if (mode == "auto") {
    // The model may answer in text; a call it opens (the format's trigger) is constrained to the
    // tools' schemas.
    if (format != ToolCallFormat::kNone) {
      json spec = {{"format", std::string(to_string(format))},
                   {"tools", *tools},
                   {"mode", "auto"},
                   {"parallel", parallel_calls}};
      out.constraint.kind = StructuredOutputs::Kind::kToolCalls;
      out.constraint.spec = dump(spec);
      out.constraint.trigger = std::string(tool_call_trigger(format));
      out.constraint.repeat_trigger = true;
    }
    return std::nullopt;
  }
  if (out.format == ToolCallFormat::kNone) out.format = ToolCallFormat::kHermes;
  json spec = {{"format", std::string(to_string(out.format))},
               {"tools", *tools},
               {"mode", mode},
               {"parallel", parallel_calls}};
  if (mode == "named") spec["name"] = named;
  out.constraint.kind = StructuredOutputs::Kind::kToolCalls;
  out.constraint.spec = dump(spec);
  return std::nullopt;
}

}  // namespace pagoda::server
