// OpenAI's batch file format (`pagoda run-batch`): input lines {"custom_id", "method": "POST",
// "url", "body"} and output lines {"id", "custom_id", "response": {"status_code", "request_id",
// "body"} | null, "error": {"code", "message"} | null}. Pure functions over text: parsing is
// hostile-input safe (a bad line is a BatchLine with an error, never an exception), and the
// output side reads back which custom_ids a (possibly torn) output file already answers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_set>

#include "server/offline_completion.h"
#include "server/openai_request.h"

namespace pagoda::server {

// What a line's url asks for: generation (chat / completions) or pooling.
enum class BatchUrl { kGeneration, kEmbeddings, kRerank, kScore };

// One input line: what it asks for, or why it cannot run (error_code set).
struct BatchLine {
  std::string custom_id;  // "" when missing or not a string
  BatchUrl url = BatchUrl::kGeneration;
  Endpoint endpoint = Endpoint::kChat;  // url kGeneration
  std::string body;                     // the request body as JSON text
  std::string error_code, error_message;
};

// Parses input line `line_number` (1-based, for messages). Accepts url /v1/chat/completions,
// /v1/completions, /v1/embeddings, /v1/rerank (or /rerank) and /v1/score; refuses other urls,
// methods other than POST, unknown keys, a custom_id that is empty or over 512 bytes, a body that
// is not an object or asks to stream.
BatchLine parse_batch_line(std::string_view text, size_t line_number);

// Output lines.
std::string batch_error_line(const std::string& custom_id, const std::string& code,
                             const std::string& message);
std::string batch_response_line(const std::string& custom_id, const OfflineResult& result);

// The custom_ids answered by the complete lines of an output file's `text` (lines that do not
// parse are ignored), and in `complete_bytes` the length of its whole lines (a kill during a
// write leaves a torn last line, which the caller cuts off before appending).
std::unordered_set<std::string> batch_done_ids(std::string_view text, size_t& complete_bytes);

}  // namespace pagoda::server
