// OfflineCompletion: one parsed /v1/chat/completions or /v1/completions request run to its
// non-streamed response body without HTTP (`pagoda run-batch`). It submits one engine request per
// prompt (n samples each), accumulates the choices on the engine thread (text through the chat
// output parser, logprobs, prompt logprobs, usage) and calls `done` once, with the HTTP status
// and the body the server would have answered (full_response_json, or an OpenAI error body).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pagoda/engine.h"
#include "server/openai_request.h"

namespace pagoda::server {

struct OfflineResult {
  int status_code = 200;
  std::string request_id;  // the response id (cmpl-... / chatcmpl-...)
  std::string body;        // JSON text
};

using OfflineDone = std::function<void(OfflineResult)>;

// Submits `requests` for one of run-batch's runs: request i's outputs go to
// run->on_output(i, out), and a result it returns to run->done. When the engine refuses one, the
// run is marked failed, the requests already submitted are aborted and run->done gets
// to_error(status) (an ApiError) as the result `result_id`'s body. Run has: std::mutex mu;
// bool failed; std::optional<OfflineResult> on_output(size_t, RequestOutput); OfflineDone done.
template <class Run, class ToError>
void submit_offline_requests(const std::shared_ptr<Run>& run, Engine& engine,
                             std::vector<GenerateRequest> requests, const std::string& result_id,
                             ToError to_error) {
  std::vector<std::string> submitted;
  for (size_t i = 0; i < requests.size(); ++i) {
    const std::string id = requests[i].request_id;
    Status st = engine.add_request(std::move(requests[i]), [run, i](RequestOutput out) {
      std::optional<OfflineResult> result = run->on_output(i, std::move(out));
      if (result) run->done(std::move(*result));
    });
    if (!st.ok()) {
      {
        std::lock_guard<std::mutex> lock(run->mu);
        run->failed = true;
      }
      for (const std::string& live : submitted)
        engine.abort(live);
      const auto e = to_error(st);
      run->done(OfflineResult{e.status, result_id, e.body()});
      return;
    }
    submitted.push_back(id);
  }
}

// Starts `spec` on `engine`; `done` is called exactly once (on the engine thread, or from inside
// this call when a request is refused). `engine` must outlive the run. spec.stream must be false.
void run_offline_completion(GenerationSpec spec, Engine& engine, OfflineDone done);

}  // namespace pagoda::server
