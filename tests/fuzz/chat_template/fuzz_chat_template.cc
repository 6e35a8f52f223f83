// libFuzzer target: ChatTemplate::parse + render on arbitrary template text with small
// limits, against a fixed conversation (system, user, assistant tool call, tool result,
// unicode) and tools. Every outcome must be a Status: no crash, leak, hang or sanitizer
// report, and a successful render must respect the output limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "tokenizer/chat_template.h"

namespace {

const nlohmann::ordered_json& messages() {
  static const auto m = nlohmann::ordered_json::parse(R"J([
    {"role": "system", "content": "sys ✓"},
    {"role": "user", "content": "Hi {{ x }} \n\t 日本"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345", "type": "function",
      "function": {"name": "f", "arguments": {"a": 1, "b": [true, null, 2.5]}}}]},
    {"role": "tool", "tool_call_id": "call12345", "content": "{\"r\": 1}"},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": ["part", {"type": "text", "text": "t"}]}
  ])J");
  return m;
}

const nlohmann::ordered_json& tools() {
  static const auto t = nlohmann::ordered_json::parse(R"J([
    {"type": "function", "function": {"name": "f", "description": "d",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}
  ])J");
  return t;
}

const nlohmann::ordered_json& extra() {
  static const auto e = nlohmann::ordered_json::parse(
      R"J({"n": 3, "f": -1.5, "s": "abc", "l": [3, 1, 2], "d": {"k": "v", "n": {"m": []}}})J");
  return e;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  pagoda::tokenizer::ChatTemplateLimits limits;
  limits.max_steps = 200'000;
  limits.max_output_bytes = 64 * 1024;
  auto parsed = pagoda::tokenizer::ChatTemplate::parse(source, limits);
  if (!parsed.ok()) return 0;
  for (int variant = 0; variant < 2; ++variant) {
    pagoda::tokenizer::ChatTemplateInputs in;
    in.messages = &messages();
    in.tools = variant == 0 ? &tools() : nullptr;
    in.add_generation_prompt = variant == 0;
    in.bos_token = "<s>";
    in.eos_token = "</s>";
    in.extra_context = &extra();
    in.now = std::chrono::system_clock::time_point(std::chrono::seconds(1721995200));
    const auto out = (*parsed)->render(in);
    if (out.ok() && out->size() > limits.max_output_bytes) std::abort();
  }
  return 0;
}
