// libFuzzer target: compile_json_schema on arbitrary bytes (as a schema), with both whitespace
// options, and tool_call_grammar on the same bytes wrapped as a tool's parameters. Must not
// crash, hang or leak; a compiled grammar must validate and dump. Inputs are bounded to 64 KiB
// (the compiler's own limits bound its work; this keeps iterations fast).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "structured/json_schema.h"
#include "structured/tool_call_grammar.h"

namespace {

volatile size_t g_sink = 0;

void touch(const pagoda::Result<pagoda::structured::Grammar>& g) {
  if (!g.ok()) {
    if (g.status().message().empty()) __builtin_trap();  // errors always say something
    g_sink = g_sink + g.status().message().size();
    return;
  }
  if (!g->validate().ok()) __builtin_trap();
  g_sink = g_sink + g->to_string().size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  const std::string_view schema(reinterpret_cast<const char*>(data), size);
  pagoda::structured::JsonSchemaOptions options;
  touch(pagoda::structured::compile_json_schema(schema, options));
  options.flexible_whitespace = false;
  options.default_additional_properties = true;
  touch(pagoda::structured::compile_json_schema(schema, options));
  const std::string spec =
      R"({"format":"hermes","parallel":true,"tools":[{"name":"f","parameters":)" +
      std::string(schema) + "}]}";
  touch(pagoda::structured::tool_call_grammar(spec));
  return 0;
}
