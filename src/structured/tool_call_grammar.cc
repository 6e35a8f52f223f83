#include "structured/tool_call_grammar.h"

#include <exception>
#include <new>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "structured/json_schema_compiler.h"
#include "structured/json_schema_strings.h"

namespace pagoda::structured {
namespace {

using json_schema_detail::find_key;
using json_schema_detail::Json;

constexpr size_t kMaxSpecBytes = 4 << 20;
constexpr size_t kMaxTools = 1024;

struct Tool {
  std::string name;
  Grammar arguments;
};

struct Spec {
  std::string format;
  std::vector<Tool> tools;
  std::optional<std::string> named;
  bool parallel = false;
  bool after_trigger = false;  // mode "auto": one call's text after its opening tag
};

Status check_keys(const Json& object, std::initializer_list<std::string_view> allowed,
                  std::string_view where) {
  for (const auto& [k, v] : object.get_ref<const Json::object_t&>()) {
    bool ok = false;
    for (std::string_view a : allowed)
      ok = ok || k == a;
    if (!ok) {
      return invalid_argument("tool_calls: unknown key '{}' in {}",
                              k.size() <= 64 ? k : k.substr(0, 64) + "...", where);
    }
  }
  return Status();
}

Result<Spec> parse_spec(std::string_view text, const JsonSchemaOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(
      Json spec, json_schema_detail::parse_ordered_json(text, "tool_calls", kMaxSpecBytes,
                                                        json_schema_detail::kMaxSchemaDepth + 4));
  if (!spec.is_object()) return invalid_argument("tool_calls: the spec must be a JSON object");
  PAGODA_RETURN_IF_ERROR(
      check_keys(spec, {"format", "tools", "mode", "name", "parallel"}, "the spec"));
  Spec out;
  const Json* format = find_key(spec, "format");
  if (format == nullptr || !format->is_string())
    return invalid_argument(
        "tool_calls: 'format' must be \"hermes\", \"llama3_json\" or \"mistral\"");
  out.format = format->get<std::string>();
  if (out.format != "hermes" && out.format != "llama3_json" && out.format != "mistral") {
    return invalid_argument(
        "tool_calls: format '{}' is not supported (hermes, llama3_json, mistral)",
        out.format.size() <= 64 ? out.format : out.format.substr(0, 64) + "...");
  }
  std::string mode = "required";
  if (const Json* m = find_key(spec, "mode"); m != nullptr) {
    if (!m->is_string()) return invalid_argument("tool_calls: 'mode' must be a string");
    mode = m->get<std::string>();
  }
  const Json* name = find_key(spec, "name");
  if (mode == "named") {
    if (name == nullptr || !name->is_string())
      return invalid_argument("tool_calls: mode 'named' needs 'name', the function to call");
    out.named = name->get<std::string>();
  } else if (mode == "auto") {
    out.after_trigger = true;
  } else if (mode != "required") {
    return invalid_argument("tool_calls: mode '{}' is not supported (required, named, auto)",
                            mode.size() <= 64 ? mode : mode.substr(0, 64) + "...");
  }
  if (mode != "named" && name != nullptr) {
    return invalid_argument("tool_calls: 'name' is only for mode 'named'");
  }
  if (const Json* p = find_key(spec, "parallel"); p != nullptr) {
    if (!p->is_boolean()) return invalid_argument("tool_calls: 'parallel' must be a boolean");
    out.parallel = p->get<bool>();
  }
  const Json* tools = find_key(spec, "tools");
  if (tools == nullptr || !tools->is_array() || tools->empty())
    return invalid_argument("tool_calls: 'tools' must be a non-empty array");
  if (tools->size() > kMaxTools)
    return invalid_argument("tool_calls: {} tools (limit {})", tools->size(), kMaxTools);
  std::unordered_set<std::string> names;
  for (size_t i = 0; i < tools->size(); ++i) {
    const Json& entry = (*tools)[i];
    std::string where = fmt::format("tools[{}]", i);
    if (!entry.is_object()) return invalid_argument("tool_calls: {} must be an object", where);
    const Json* function = &entry;
    if (find_key(entry, "function") != nullptr || find_key(entry, "type") != nullptr) {
      PAGODA_RETURN_IF_ERROR(check_keys(entry, {"type", "function"}, where));
      const Json* type = find_key(entry, "type");
      if (type != nullptr && (!type->is_string() || *type != "function"))
        return invalid_argument("tool_calls: {}.type must be \"function\"", where);
      function = find_key(entry, "function");
      where += ".function";
      if (function == nullptr || !function->is_object())
        return invalid_argument("tool_calls: {} must be an object", where);
    }
    PAGODA_RETURN_IF_ERROR(
        check_keys(*function, {"name", "description", "parameters", "strict"}, where));
    const Json* fname = find_key(*function, "name");
    if (fname == nullptr || !fname->is_string() || fname->get_ref<const std::string&>().empty())
      return invalid_argument("tool_calls: {}.name must be a non-empty string", where);
    Tool tool;
    tool.name = fname->get<std::string>();
    if (!names.insert(tool.name).second) {
      return invalid_argument("tool_calls: {}.name '{}' repeats an earlier tool's name", where,
                              tool.name.size() <= 64 ? tool.name : tool.name.substr(0, 64) + "...");
    }
    const Json* parameters = find_key(*function, "parameters");
    const std::string schema =
        parameters == nullptr ? std::string(R"({"type":"object","properties":{}})")
                              : parameters->dump(-1, ' ', false, Json::error_handler_t::replace);
    Result<Grammar> arguments = compile_json_schema(schema, options);
    if (!arguments.ok())
      return invalid_argument("{}.parameters: {}", where, arguments.status().message());
    tool.arguments = std::move(*arguments);
    out.tools.push_back(std::move(tool));
  }
  if (out.named && names.count(*out.named) == 0) {
    return invalid_argument(
        "tool_calls: 'name' '{}' is none of the tools",
        out.named->size() <= 64 ? *out.named : out.named->substr(0, 64) + "...");
  }
  return out;
}

Result<Grammar> build(const Spec& spec, const JsonSchemaOptions& options) {
  GrammarBuilder b;
  const std::string ws = json_whitespace_regex(options);
  const bool flexible = !ws.empty();
  // Separators inside the envelope: flexible whitespace, or json.dumps's ", " and ": ".
  const std::string colon = flexible ? ws + ":" + ws : ": ";
  const std::string comma = flexible ? ws + "," + ws : ", ";
  const std::string args_key = spec.format == "llama3_json" ? "parameters" : "arguments";
  std::string before, after;  // around each call's JSON object
  if (spec.format == "hermes") {
    // Mode auto: the text after the "<tool_call>" that activated the constraint.
    before = regex_escape(spec.after_trigger ? "\n" : "<tool_call>\n");
    after = regex_escape("\n</tool_call>");
  }
  // Mode auto with llama3_json: the call's text after its trigger, {"name".
  const bool after_name_key = spec.after_trigger && spec.format == "llama3_json";
  const int32_t call = b.add_rule("tool_call");
  for (const Tool& tool : spec.tools) {
    if (spec.named && tool.name != *spec.named) continue;
    const Symbol arguments = b.embed(tool.arguments);
    const std::string open =
        (after_name_key ? std::string() : before + "\\{" + ws + regex_escape("\"name\"")) + colon +
        regex_escape(json_schema_detail::json_string_text(tool.name)) + comma +
        regex_escape("\"" + args_key + "\"") + colon;
    b.add_alternative(call, {b.lexeme(open), arguments, b.lexeme(ws + "\\}" + after)});
  }
  std::string separator;
  if (spec.format == "hermes") {
    separator = "\\n";
  } else if (spec.format == "llama3_json") {
    separator = regex_escape("; ");
  } else {
    separator = flexible ? ws + "," + ws : ", ";
  }
  std::vector<Symbol> body = {b.rule(call)};
  // In mode auto a hermes or llama3_json call is triggered one at a time; mistral's list is one.
  if (spec.parallel && (!spec.after_trigger || spec.format == "mistral")) {
    body.push_back(b.star("more_tool_calls", {b.lexeme(separator), b.rule(call)}));
  }
  if (spec.format == "mistral") {
    body.insert(
        body.begin(),
        b.lexeme((spec.after_trigger ? std::string() : regex_escape("[TOOL_CALLS]")) + "\\[" + ws));
    body.push_back(b.lexeme(ws + "\\]"));
  }
  const int32_t start = b.add_rule("tool_calls");
  b.add_alternative(start, std::move(body));
  return std::move(b).build(start);
}

}  // namespace

Result<Grammar> tool_call_grammar(std::string_view spec_json, const JsonSchemaOptions& options) {
  if (options.max_whitespace < 0 || options.max_whitespace > 1024) {
    return invalid_argument("tool_calls: max_whitespace {} is out of range [0, 1024]",
                            options.max_whitespace);
  }
  try {
    PAGODA_ASSIGN_OR_RETURN(Spec spec, parse_spec(spec_json, options));
    return build(spec, options);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("tool_calls: out of memory");
  } catch (const std::exception& e) {
    return invalid_argument("tool_calls: {}", e.what());
  }
}

}  // namespace pagoda::structured
