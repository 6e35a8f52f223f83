#include "cli/stream_request.h"

#include <condition_variable>
#include <mutex>
#include <optional>

namespace pagoda::cli {

Result<RequestOutput> stream_request(Engine& engine, GenerateRequest request,
                                     const std::function<void(const std::string&)>& on_text) {
  if (request.n != 1) return invalid_argument("stream_request takes n = 1, got {}", request.n);
  std::mutex mu;
  std::condition_variable done;
  std::optional<RequestOutput> final_output;
  PAGODA_RETURN_IF_ERROR(engine.add_request(std::move(request), [&](RequestOutput out) {
    if (!out.text_delta.empty()) on_text(out.text_delta);
    if (!out.finished) return;
    std::lock_guard<std::mutex> lock(mu);
    final_output = std::move(out);
    done.notify_all();
  }));
  std::unique_lock<std::mutex> lock(mu);
  done.wait(lock, [&] { return final_output.has_value(); });
  if (final_output->finish_reason == FinishReason::kError) {
    return internal_error("generation failed: {}", final_output->error);
  }
  return std::move(*final_output);
}

}  // namespace pagoda::cli
