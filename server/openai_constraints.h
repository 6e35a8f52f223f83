// The request fields that constrain or shape what the model writes, read into the engine's
// SamplingParams::structured and the response's output parsing:
//   - structured output: OpenAI's `response_format` (text | json_object | json_schema), vLLM's
//     `guided_json` / `guided_regex` / `guided_grammar` / `guided_choice` and its newer
//     `structured_outputs` object ({json | regex | grammar | choice | json_object}), llama.cpp's
//     `grammar` (GBNF) and `json_schema`. At most one of them per request.
//   - tools: `tools`, `tool_choice` (none | auto | required | {"type": "function", "function":
//     {"name"}}), `parallel_tool_calls`. required / named are enforced by a tool-call grammar in
//     the model's own tool-call format; auto leaves the model free and parses what it writes,
//     constraining each call it opens where the format opens calls with a tag (hermes).
// Each refusal is a 400 naming the field; a constraint that does not compile (an unsupported
// JSON Schema keyword, a regex or GBNF syntax error) is refused by Engine::add_request with the
// compiler's message, which names the keyword.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "pagoda/output_parser.h"
#include "pagoda/sampling_params.h"
#include "server/api_error.h"

namespace pagoda::server {

// Reads the structured-output fields into `out` (kind kNone when none is present).
std::optional<ApiError> parse_structured_outputs(const nlohmann::json& body,
                                                 StructuredOutputs& out);

struct ToolRequest {
  std::string tools_json;                         // the tools for the chat template ("" = none)
  ToolCallFormat format = ToolCallFormat::kNone;  // parse tool calls from the output in it
  // required / named: the tool-call grammar; auto (hermes): the same, lazily after each
  // "<tool_call>" (constraint.trigger).
  StructuredOutputs constraint;
};

// Reads tools / tool_choice / parallel_tool_calls of a chat request. `format` is the server's
// tool-call format for this model (--tool-call-parser, or detected from its chat template);
// kNone with tool_choice required/named uses the hermes format (the grammar makes the model
// write it; the same parser reads it back).
std::optional<ApiError> parse_tools(const nlohmann::json& body, ToolCallFormat format,
                                    ToolRequest& out);

}  // namespace pagoda::server
