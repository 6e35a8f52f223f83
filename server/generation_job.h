// GenerationJob: one /v1/chat/completions or /v1/completions request in flight. It submits one
// engine request per prompt (each with n samples), receives their outputs on the engine thread
// and hands them to its connection's strand, where it either streams SSE chunks (the 200 header
// goes out with the first output, so anything that fails before can still be a real status:
// 429 queue full / queue timeout, 503 draining, 400) or accumulates the choices for one JSON
// response. A lost connection (or a client too slow to read) aborts every engine request of the
// job; later outputs are ignored. With a ResponseEncoder (the Anthropic and Responses APIs) the
// same job writes that API's shape instead of chat/completions objects.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "pagoda/engine.h"
#include "server/http_session.h"
#include "server/model_registry.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/response_encoder.h"

namespace pagoda::server {

class ServerState;

class GenerationJob : public ConnectionListener,
                      public std::enable_shared_from_this<GenerationJob> {
 public:
  // `encoder` (optional) writes the answer; it requires one prompt and n = 1.
  GenerationJob(GenerationSpec spec, Engine& engine, ServerState& state,
                const std::shared_ptr<HttpSession>& session,
                std::unique_ptr<ResponseEncoder> encoder = nullptr);
  ~GenerationJob() override;

  // On the session's strand: submits the engine requests (answering the error if one is
  // refused) and arms the queue timeout.
  void start();
  void on_connection_lost(AbortCause cause) override;
  // Keeps the model loaded while the job lives (until its last engine output).
  void hold(ModelLease lease) { lease_ = std::move(lease); }

 private:
  struct Choice {
    std::string text;  // non-streamed: the whole text
    std::vector<TokenLogprobs> logprobs;
    std::vector<TokenLogprobs> prompt_logprobs;  // from the sample's first output
    FinishReason finish_reason = FinishReason::kNone;
    std::string stop_reason;
    std::optional<int32_t> stop_token_id;
    int32_t completion_tokens = 0;
    int64_t text_offset = 0;  // streamed completions logprobs: bytes sent so far
    bool started = false;     // streamed: the first chunk (role / echo) went out
    bool finished = false;
    // Chat with a tool-call or reasoning format: splits the text; non-streamed, its parts
    // accumulate in text (content), reasoning and tool_calls.
    std::unique_ptr<OutputParser> parser;
    std::string reasoning;
    std::vector<ToolCallResult> tool_calls;
    std::chrono::steady_clock::time_point last_token_time;
  };

  void on_output(size_t prompt_index, RequestOutput out);
  void on_queue_timeout();
  void stream_output(Choice& choice, int32_t index, const RequestOutput& out);
  // The parts of `out`'s text: through the choice's parser if it has one (flushed when `out`
  // finishes), else all content.
  ParsedDelta split_text(Choice& choice, const RequestOutput& out);
  // Appends the parts to the choice's text, reasoning and tool calls.
  static void accumulate(Choice& choice, ParsedDelta& parts);
  ChoiceResult take_result(size_t index);
  void finish_stream();
  void finish_non_streamed();
  // An error before any output: a plain error response. After the stream started: an SSE error
  // event and [DONE].
  void fail(const ApiError& error);
  void abort_all();
  std::string token_text(int32_t id) const;
  std::shared_ptr<HttpSession> session() const { return session_.lock(); }

  GenerationSpec spec_;
  Engine& engine_;
  ServerState& state_;
  ModelLease lease_;
  std::weak_ptr<HttpSession> session_;
  boost::asio::any_io_executor executor_;
  boost::asio::steady_timer queue_timer_;
  ResponseMeta meta_;
  TokenText token_text_fn_;
  std::unique_ptr<ResponseEncoder> encoder_;

  std::vector<std::string> request_ids_;  // one per prompt
  std::vector<bool> request_live_;        // submitted and not all samples finished
  std::vector<int32_t> live_samples_;     // per prompt
  std::vector<Choice> choices_;           // prompt-major: prompt p, sample i -> p * n + i
  std::vector<RequestUsage> prompt_usage_;
  int32_t num_unfinished_ = 0;
  bool any_output_ = false;
  bool stream_started_ = false;
  bool done_ = false;  // responded, failed or abandoned: later outputs are only counted
};

}  // namespace pagoda::server
