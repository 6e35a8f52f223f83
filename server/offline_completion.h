// OfflineCompletion: one parsed /v1/chat/completions or /v1/completions request run to its
// non-streamed response body without HTTP (`pagoda run-batch`). It submits one engine request per
// prompt (n samples each), accumulates the choices on the engine thread (text through the chat
// output parser, logprobs, prompt logprobs, usage) and calls `done` once, with the HTTP status
// and the body the server would have answered (full_response_json, or an OpenAI error body).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "pagoda/engine.h"
#include "server/openai_request.h"

namespace pagoda::server {

struct OfflineResult {
  int status_code = 200;
  std::string request_id;  // the response id (cmpl-... / chatcmpl-...)
  std::string body;        // JSON text
};

using OfflineDone = std::function<void(OfflineResult)>;

// Starts `spec` on `engine`; `done` is called exactly once (on the engine thread, or from inside
// this call when a request is refused). `engine` must outlive the run. spec.stream must be false.
void run_offline_completion(GenerationSpec spec, Engine& engine, OfflineDone done);

}  // namespace pagoda::server
