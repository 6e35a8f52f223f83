// Parsing and validating the bodies of POST /v1/chat/completions and /v1/completions into a
// GenerationSpec: tokenized prompts plus the engine's SamplingParams / StopConditions. Every
// rejection is an ApiError (400) naming the field in `param`; unknown fields are refused, null
// fields count as absent (like OpenAI). Chat messages go through the model's chat template
// (tools are handed to it); text prompts through the model's tokenizer. Structured-output and
// tool fields: openai_constraints.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pagoda/engine.h"
#include "pagoda/output_parser.h"
#include "server/api_error.h"
#include "server/server_config.h"

namespace pagoda::server {

enum class Endpoint { kChat, kCompletion };

struct PromptInput {
  std::vector<int32_t> tokens;  // non-empty, each in [0, vocab)
  std::string text;             // the prompt as text (for echo); detokenized for id prompts
};

struct GenerationSpec {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;                 // the served model name (echoed in responses)
  std::vector<PromptInput> prompts;  // chat: exactly one; completions: 1..max_batch_prompts
  SamplingParams sampling;
  StopConditions stop;
  int32_t n = 1;  // samples per prompt
  int32_t priority = 0;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // Chat: logprobs (bool) + top_logprobs; completions: logprobs (int = top count).
  bool logprobs = false;
  int32_t top_logprobs = 0;
  bool echo = false;             // completions: prepend the prompt text to each choice
  int32_t prompt_logprobs = -1;  // completions: vLLM's prompt_logprobs (top count); -1 = absent
  bool skip_special_tokens = true;
  std::string cache_salt;
  std::string lora_name;  // the LoRA adapter "model" named ("" = the base model)
  std::optional<BeamSearchParams> beam_search;  // use_beam_search (openai_beam_search.h)
  // Chat: how the output is split (OutputParser): tool calls in this format when the request
  // has tools (and tool_choice is not none), reasoning per the server's --reasoning-parser.
  ToolCallFormat tool_format = ToolCallFormat::kNone;
  ReasoningFormat reasoning = ReasoningFormat::kNone;
};

// Reads the JSON body of `endpoint` for `engine`'s model. Returns an ApiError for a body that is
// not valid JSON (or nested deeper than config.max_json_depth), a field of the wrong type or out
// of range, an unknown model, or a prompt that cannot fit the context.
std::optional<ApiError> parse_generation_request(const std::string& body, Endpoint endpoint,
                                                 const Engine& engine, const ServerConfig& config,
                                                 GenerationSpec& out);

// Parses `body` as a JSON object, checking the nesting depth first (a deep document would
// otherwise cost stack in later dumps). Errors name no field.
std::optional<ApiError> parse_json_object(const std::string& body, int32_t max_depth,
                                          nlohmann::json& out);

// The deepest bracket nesting of a JSON text (strings skipped); stops counting past `limit`.
int32_t json_nesting_depth(const std::string& text, int32_t limit);

}  // namespace pagoda::server
