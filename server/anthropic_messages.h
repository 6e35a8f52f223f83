// Anthropic's Messages API on pagoda: POST /v1/messages and /v1/messages/count_tokens. A request
// is translated into the chat-completions request it means (system -> a system message, text
// blocks -> content, tool_use blocks -> assistant tool_calls, tool_result blocks -> tool
// messages, tools / tool_choice -> the OpenAI tool fields, stop_sequences -> stop) and read by
// the same validator (openai_request.h), so both APIs share one prompt, tool and sampling path.
// AnthropicMessageEncoder writes the answer as a Message object or as Anthropic's SSE events
// (message_start, content_block_start, ping, content_block_delta (text_delta /
// input_json_delta), content_block_stop, message_delta, message_stop). Unknown fields are
// refused with a 400 naming them; errors use Anthropic's shape (api_error.h, by path).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "pagoda/engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/response_encoder.h"
#include "server/server_config.h"

namespace pagoda::server {

// The chat-completions body a Messages body means (`count_tokens`: the count_tokens schema,
// without max_tokens / sampling fields). Checks the Messages schema: fields, roles, blocks.
std::optional<ApiError> messages_to_chat_request(const nlohmann::json& body, bool count_tokens,
                                                 nlohmann::json& chat);

// POST /v1/messages: the generation spec of `body`.
std::optional<ApiError> parse_messages_request(const std::string& body, const Engine& engine,
                                               const ServerConfig& config, GenerationSpec& out);

// POST /v1/messages/count_tokens: the prompt's length in tokens (system, messages and tools as
// the chat template renders them).
std::optional<ApiError> count_message_tokens(const std::string& body, const Engine& engine,
                                             const ServerConfig& config, int64_t& num_tokens);

// stop_reason of a finished answer: "tool_use", "max_tokens", "stop_sequence" (`stop_sequence`
// set to the matched string) or "end_turn".
std::string anthropic_stop_reason(const ChoiceResult& choice, std::string& stop_sequence);

class AnthropicMessageEncoder : public ResponseEncoder {
 public:
  AnthropicMessageEncoder(std::string id, std::string model, int64_t input_tokens)
      : id_(std::move(id)), model_(std::move(model)), input_tokens_(input_tokens) {}

  std::string stream_begin() override;
  std::string stream_delta(const ParsedDelta& delta) override;
  std::string stream_end(const ChoiceResult& choice, const UsageTotals& usage) override;
  std::string stream_error(const ApiError& error) override;
  std::string full_response(const ChoiceResult& choice, const UsageTotals& usage) override;

 private:
  enum class Block { kNone, kText, kToolUse };
  // Opens block `kind` (closing the open one); the first opening is followed by a ping.
  void open_block(Block kind, const nlohmann::json& content_block, std::string& events);
  void close_block(std::string& events);

  std::string id_;
  std::string model_;
  int64_t input_tokens_ = 0;
  Block open_ = Block::kNone;
  int32_t block_index_ = -1;  // the open (or last) block's index
  int32_t tool_call_ = -1;    // the tool call whose block is open
  bool pinged_ = false;
};

}  // namespace pagoda::server
