// ChatTemplate: renders a model's Jinja2 chat template (tokenizer.chat_template) the way
// Hugging Face transformers does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// raise_exception, tojson, strftime_now), with bounded time and output size. The renderer is
// our own Jinja interpreter (src/jinja/), byte-identical to python3-jinja2 on the
// templates and conversations of the tests.
//
// Inputs are nlohmann::ordered_json: Python keeps dict keys in insertion order, and tojson
// output (tool schemas) depends on it, so parse requests with nlohmann::ordered_json::parse.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace pagoda::tokenizer {

struct ChatTemplateInputs {
  const nlohmann::ordered_json* messages = nullptr;  // [{role, content, ...}]
  const nlohmann::ordered_json* tools = nullptr;  // optional: [{type: function, function: {...}}]
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  // Optional object of further variables (e.g. date_string, custom special tokens); these
  // override the variables above when names collide.
  const nlohmann::ordered_json* extra_context = nullptr;
  // Clock for strftime_now (local time); nullopt: the current time.
  std::optional<std::chrono::system_clock::time_point> now;
};

struct ChatTemplateLimits {
  size_t max_output_bytes = 8u << 20;  // also caps every intermediate string
  uint64_t max_steps = 50'000'000;     // interpreter operations before giving up
};

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  // Parses the template; a syntax error names the line (invalid_argument). Valid Jinja
  // that chat templates do not need ({% include %}, {% extends %}, ...) is unimplemented.
  static Result<std::unique_ptr<ChatTemplate>> parse(std::string_view source,
                                                     ChatTemplateLimits limits = {});
  // Renders. raise_exception(msg) gives invalid_argument whose message is exactly msg;
  // other template errors give invalid_argument naming the line; exceeding a limit gives
  // resource_exhausted. Thread-safe: one parsed template may render concurrently.
  virtual Result<std::string> render(const ChatTemplateInputs& inputs) const = 0;
};

}  // namespace pagoda::tokenizer
