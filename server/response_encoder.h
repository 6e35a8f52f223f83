// ResponseEncoder: how a GenerationJob writes its answer in an API shape other than OpenAI's
// chat/completions objects (Anthropic's Messages, OpenAI's Responses). The job keeps everything
// about the engine (submission, outputs, tool-call parsing, aborts, timeouts) and hands the
// encoder only the parsed pieces of its one choice; the encoder returns the bytes to send.
// Such a job has exactly one prompt and n = 1.
#pragma once

#include <string>

#include "pagoda/output_parser.h"
#include "server/api_error.h"
#include "server/openai_response.h"

namespace pagoda::server {

class ResponseEncoder {
 public:
  virtual ~ResponseEncoder() = default;

  // Streamed: the events that open the stream (sent with the first output).
  virtual std::string stream_begin() = 0;
  // Streamed: the events for one parsed piece of output (may be "").
  virtual std::string stream_delta(const ParsedDelta& delta) = 0;
  // Streamed: the closing events. `choice` is the whole answer (text, tool calls, finish).
  virtual std::string stream_end(const ChoiceResult& choice, const UsageTotals& usage) = 0;
  // Streamed: an error after the stream began.
  virtual std::string stream_error(const ApiError& error) = 0;
  // Not streamed: the response body.
  virtual std::string full_response(const ChoiceResult& choice, const UsageTotals& usage) = 0;
};

}  // namespace pagoda::server
