// ChatTemplate: renders a model's Jinja2 chat template (tokenizer.chat_template) the way
// Hugging Face transformers does (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
// raise_exception, tojson, strftime_now), with bounded time and output size.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace pagoda::tokenizer {

struct ChatTemplateInputs {
  const nlohmann::json* messages = nullptr;  // [{role, content, ...}]
  const nlohmann::json* tools = nullptr;     // optional: [{type: function, function: {...}}]
  bool add_generation_prompt = true;
  std::string bos_token;
  std::string eos_token;
  const nlohmann::json* extra_context = nullptr;  // optional object of further variables
};

struct ChatTemplateLimits {
  size_t max_output_bytes = 8u << 20;
  uint64_t max_steps = 50'000'000;  // interpreter operations before giving up
};

class ChatTemplate {
 public:
  virtual ~ChatTemplate() = default;
  // Parses the template; a syntax error names the line.
  static Result<std::unique_ptr<ChatTemplate>> parse(std::string_view source,
                                                     ChatTemplateLimits limits = {});
  // Renders; raise_exception(msg) and runtime errors become invalid_argument with the message.
  virtual Result<std::string> render(const ChatTemplateInputs& inputs) const = 0;
};

}  // namespace pagoda::tokenizer
