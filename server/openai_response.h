// The JSON the OpenAI SDKs parse: chat.completion / text_completion objects, their streamed
// chunks (chat.completion.chunk / text_completion), usage, logprobs in the chat shape
// ({"content": [{token, logprob, bytes, top_logprobs}]}) and the completions shape ({tokens,
// token_logprobs, top_logprobs, text_offset}). Pure functions: the caller accumulates.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagoda/engine.h"
#include "pagoda/output_parser.h"
#include "server/openai_request.h"

namespace pagoda::server {

// Decodes one token id to its text (for logprobs).
using TokenText = std::function<std::string(int32_t)>;

struct ResponseMeta {
  Endpoint endpoint = Endpoint::kChat;
  std::string id;  // chatcmpl-... / cmpl-...
  int64_t created = 0;
  std::string model;
  bool logprobs = false;
  // The raw bytes of a token for chat logprobs' "bytes" (unset: the bytes of its text).
  TokenText token_bytes;
  // Completions with echo and logprobs = k: the prompt's tokens lead each choice's logprobs (the
  // first with null logprob and top_logprobs, the rest with their top k), as OpenAI does.
  int32_t echo_top_logprobs = -1;  // k; -1 = no prompt tokens in the logprobs
  // vLLM's prompt_logprobs = m: each choice gets "prompt_logprobs": [null, {"<id>": {logprob,
  // rank, decoded_token}}...] with the prompt token and the m most likely. -1 = absent.
  int32_t prompt_logprobs = -1;
};

// A choice's prompt logprobs (RequestOutput::prompt_logprobs and the prompt's first token).
struct PromptLogprobsPart {
  int32_t first_token = -1;
  const std::vector<TokenLogprobs>* entries = nullptr;  // prompt tokens 1..
};

// A tool call of a non-streamed chat response (arguments: JSON text).
struct ToolCallResult {
  std::string id;
  std::string name;
  std::string arguments;
};

// One finished choice of a non-streamed response. A chat choice with tool calls has
// finish_reason "tool_calls" (when the engine's reason is stop) and null content when it has no
// text; reasoning (a reasoning parser's output) is message.reasoning_content.
struct ChoiceResult {
  int32_t index = 0;
  std::string text;
  std::string reasoning;
  std::vector<ToolCallResult> tool_calls;
  std::vector<TokenLogprobs> logprobs;  // one per generated token when requested
  int32_t prompt_first_token = -1;      // with ResponseMeta echo/prompt logprobs
  std::vector<TokenLogprobs> prompt_logprobs;
  FinishReason finish_reason = FinishReason::kNone;
  std::string stop_reason;
  std::optional<int32_t> stop_token_id;
};

// Appends a parser's parts to a non-streamed choice's text, reasoning and tool calls (a tool
// call's id and name from its first delta, its arguments concatenated; negative indices
// skipped).
void append_parsed(const ParsedDelta& parts, std::string& text, std::string& reasoning,
                   std::vector<ToolCallResult>& tool_calls);

struct UsageTotals {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
};

// A random id with the given prefix ("chatcmpl-" + 32 hex digits).
std::string make_response_id(std::string_view prefix);

// The whole non-streamed response object.
std::string full_response_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                               const UsageTotals& usage, const TokenText& token_text);

// One streamed chunk for choice `index`: optional role (chat's first chunk), text delta,
// reasoning and tool-call deltas (chat), logprobs of the delta's tokens (text_offset counts from
// `text_offset`, completions only), and the finish reason on the last chunk ("tool_calls" when
// `made_tool_calls` and the reason is stop). `usage_null` adds "usage": null (include_usage
// streams).
struct ChunkParts {
  int32_t index = 0;
  bool role = false;
  std::string_view text;
  std::string_view reasoning;
  const std::vector<ToolCallDelta>* tool_calls = nullptr;
  bool made_tool_calls = false;
  const std::vector<TokenLogprobs>* logprobs = nullptr;
  PromptLogprobsPart prompt;  // the first chunk of a choice: its prompt logprobs, if any
  int64_t text_offset = 0;
  FinishReason finish_reason = FinishReason::kNone;
  std::string_view stop_reason;
  std::optional<int32_t> stop_token_id;
  bool usage_null = false;
};
std::string chunk_json(const ResponseMeta& meta, const ChunkParts& parts,
                       const TokenText& token_text);

// The final include_usage chunk: "choices": [] and the usage.
std::string usage_chunk_json(const ResponseMeta& meta, const UsageTotals& usage);

// An SSE event: "data: <payload>\n\n".
std::string sse_event(std::string_view payload);

}  // namespace pagoda::server
