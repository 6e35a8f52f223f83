// OpenAI's Responses API on pagoda: POST /v1/responses, GET and DELETE /v1/responses/{id}. A
// request is translated into the chat-completions request it means (instructions -> a system
// message, input messages / function_call / function_call_output items -> chat messages with
// tool_calls and tool messages, function tools / tool_choice -> the chat tool fields,
// text.format -> response_format, max_output_tokens -> max_tokens) and read by the same
// validator (openai_request.h). previous_response_id continues the stored conversation
// (response_store.h; its instructions are not carried over, as OpenAI does). ResponsesEncoder
// writes the response object (output items: a message with output_text, function_call items)
// or the typed SSE events (response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta / .done,
// response.function_call_arguments.delta / .done, response.content_part.done,
// response.output_item.done, response.completed or response.incomplete), each with its
// sequence_number, and stores the finished response when the request asked to.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "pagoda/engine.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/response_encoder.h"
#include "server/response_store.h"
#include "server/server_config.h"

namespace pagoda::server {

struct ResponsesRequest {
  GenerationSpec spec;
  nlohmann::json chat;          // the translated chat-completions body
  nlohmann::json conversation;  // the chat messages so far, without the instructions
  nlohmann::json echo;          // the request fields the response object repeats
  bool store = true;
};

// Checks the Responses schema of `body` and translates it (out.chat, out.conversation,
// out.echo, out.store). `store` resolves previous_response_id (nullptr: refused).
std::optional<ApiError> responses_to_chat_request(const nlohmann::json& body, ResponseStore* store,
                                                  ResponsesRequest& out);

// POST /v1/responses: translation + the chat validator (out.spec).
std::optional<ApiError> parse_responses_request(const std::string& body, const Engine& engine,
                                                const ServerConfig& config, ResponseStore& store,
                                                ResponsesRequest& out);

class ResponsesEncoder : public ResponseEncoder {
 public:
  // `store`: where the finished response goes (nullptr: not stored).
  ResponsesEncoder(std::string id, std::string model, int64_t created_at, ResponsesRequest& request,
                   ResponseStore* store);

  std::string stream_begin() override;
  std::string stream_delta(const ParsedDelta& delta) override;
  std::string stream_end(const ChoiceResult& choice, const UsageTotals& usage) override;
  std::string stream_error(const ApiError& error) override;
  std::string full_response(const ChoiceResult& choice, const UsageTotals& usage) override;

 private:
  // The response object; `usage` null while in progress.
  nlohmann::json response_object(const std::string& status, const nlohmann::json& output,
                                 const ChoiceResult* finished, const nlohmann::json& usage) const;
  std::string event(const std::string& type, nlohmann::json data);
  void close_item(std::string& events);
  void save(const nlohmann::json& response, const ChoiceResult& choice);

  std::string id_;
  std::string model_;
  int64_t created_at_ = 0;
  nlohmann::json conversation_;
  nlohmann::json echo_;
  ResponseStore* store_ = nullptr;
  int64_t sequence_number_ = 0;
  // Streaming: the items sent so far (done), the open one and its text / arguments.
  nlohmann::json items_ = nlohmann::json::array();
  nlohmann::json open_item_;  // null when none
  std::string open_text_;
  int32_t open_call_ = -1;
};

}  // namespace pagoda::server
