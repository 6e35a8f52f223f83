// pagoda::OutputParser: splits a model's generated text, as it streams, into the three parts an
// OpenAI response carries: the answer (`content`), the reasoning of a thinking model
// (`reasoning_content`, from <think>...</think>) and function calls (`tool_calls`, in the model's
// own tool-call format). Feed it every text delta of one sample in order, then call finish();
// concatenating every ParsedDelta's parts gives the whole response (the non-streaming body), and
// the deltas themselves are what a stream sends. Text that is not a well-formed tool call stays
// content: nothing the model wrote is lost. Not thread-safe (one parser per sample).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pagoda {

enum class ToolCallFormat {
  kNone,    // no tool-call parsing: everything after the reasoning is content
  kHermes,  // Hermes 2/3, Qwen2.5/3: <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>
  kLlama3Json,  // Llama 3.1-3.3: [<|python_tag|>]{"name": ..., "parameters": {...}} (several: "; ")
  kMistral,     // Mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
};

enum class ReasoningFormat {
  kNone,
  // DeepSeek-R1 (and its distills): the chat template opens <think> in the prompt, so the output
  // starts inside the reasoning (a leading "<think>" is dropped) and "</think>" ends it; output
  // with no "</think>" is all reasoning.
  kDeepSeekR1,
  // Qwen3: reasoning only when the output starts with "<think>" (after whitespace); otherwise (the
  // thinking switched off) everything is content.
  kQwen3,
};

// "hermes", "llama3_json", "mistral" (and "none"); nullopt for another name.
std::optional<ToolCallFormat> tool_call_format_from_name(std::string_view name);
std::string_view to_string(ToolCallFormat format);
// The text that opens a call in `format`, which tool_choice "auto" watches for before it
// constrains the call: "<tool_call>", "{\"name\"" (llama3_json), "[TOOL_CALLS]"; "" for kNone.
std::string_view tool_call_trigger(ToolCallFormat format);
// "deepseek_r1", "qwen3" (and "none"); nullopt for another name.
std::optional<ReasoningFormat> reasoning_format_from_name(std::string_view name);
std::string_view to_string(ReasoningFormat format);

// The tool-call format a chat template teaches its model: hermes if it mentions "<tool_call>",
// mistral for "[TOOL_CALLS]", llama3_json for "<|python_tag|>" or a Llama 3 template that renders
// tools; kNone when it renders no tools.
ToolCallFormat detect_tool_call_format(std::string_view chat_template);

// One step of one tool call. The first delta of a call carries its id and name (and maybe the
// start of its arguments); later ones append to `arguments` (the JSON text of the call's
// arguments object, as OpenAI streams it). Calls are numbered 0, 1, ... in output order.
struct ToolCallDelta {
  int32_t index = 0;
  std::string id;         // first delta only
  std::string name;       // first delta only
  std::string arguments;  // appended
};

struct ParsedDelta {
  std::string content;
  std::string reasoning;
  std::vector<ToolCallDelta> tool_calls;

  bool empty() const { return content.empty() && reasoning.empty() && tool_calls.empty(); }
};

struct OutputParserOptions {
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  ReasoningFormat reasoning = ReasoningFormat::kNone;
  // Tool call ids are id_prefix + the call's index ("call_<request>_0", ...).
  std::string id_prefix = "call_";
};

class OutputParser {
 public:
  explicit OutputParser(OutputParserOptions options);
  ~OutputParser();
  OutputParser(OutputParser&&) noexcept;
  OutputParser& operator=(OutputParser&&) noexcept;

  // The next piece of output text (any split: a delta may end inside a tag or a UTF-8
  // sequence). Returns what is now certain; text that may still turn out to be a tag or a call
  // is held back, and so is an incomplete UTF-8 sequence at the end of a returned part. What
  // feed()s and finish() return together does not depend on how the text was split.
  ParsedDelta feed(std::string_view text);
  // The output ended: everything held back is resolved (an unfinished or malformed call
  // becomes content).
  ParsedDelta finish();

  // Tool calls started so far (the response's finish_reason is "tool_calls" when > 0).
  int32_t num_tool_calls() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pagoda
