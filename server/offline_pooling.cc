// run_offline_pooling (see offline_pooling.h).
#include "server/offline_pooling.h"

#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "server/api_error.h"
#include "server/openai_response.h"

namespace pagoda::server {
namespace {

// The state of one run, shared by its engine callbacks.
struct PoolingRun {
  PoolingWork work;
  OfflineDone done;
  std::string id;
  std::mutex mu;
  std::vector<std::vector<float>> outputs;
  int64_t prompt_tokens = 0;
  size_t num_unfinished = 0;
  bool failed = false;

  // On the engine thread: the result once every input finished (or one failed).
  std::optional<OfflineResult> on_output(size_t i, RequestOutput out) {
    if (!out.finished) return std::nullopt;
    std::lock_guard<std::mutex> lock(mu);
    if (failed || i >= outputs.size()) return std::nullopt;
    if (out.finish_reason != FinishReason::kStop || out.embedding.empty()) {
      failed = true;
      const ApiError e = out.finish_reason == FinishReason::kAbort
                             ? unavailable("the request was aborted", 1)
                         : out.error_code == StatusCode::kInvalidArgument
                             ? bad_request(out.error, work.field)
                             : internal("pooling failed: " + out.error);
      return OfflineResult{e.status, id, e.body()};
    }
    prompt_tokens += out.usage.prompt_tokens;
    outputs[i] = std::move(out.embedding);
    if (--num_unfinished > 0) return std::nullopt;
    return OfflineResult{200, id, work.respond(outputs, prompt_tokens, id)};
  }
};

}  // namespace

void run_offline_pooling(PoolingWork work, Engine& engine, OfflineDone done) {
  auto run = std::make_shared<PoolingRun>();
  run->work = std::move(work);
  run->done = std::move(done);
  run->id = make_response_id(run->work.id_prefix);
  const size_t n = run->work.inputs.size();
  run->outputs.resize(n);
  run->num_unfinished = n;
  std::vector<GenerateRequest> requests(n);
  for (size_t i = 0; i < n; ++i) {
    GenerateRequest& req = requests[i];
    req.request_id = fmt::format("{}-{}", run->id, i);
    req.prompt_tokens = std::move(run->work.inputs[i]);
    req.sampling.pooling = run->work.pooling;
    if (i < run->work.second_segment.size()) {
      req.sampling.second_segment_start = run->work.second_segment[i];
    }
    req.stop.max_tokens = 1;
  }
  submit_offline_requests(run, engine, std::move(requests), run->id,
                          [&run](const Status& st) { return from_status(st, run->work.field); });
}

}  // namespace pagoda::server
