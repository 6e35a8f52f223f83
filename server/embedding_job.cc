#include "server/embedding_job.h"

#include <algorithm>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include "server/openai_response.h"
#include "server/server_state.h"

namespace pagoda::server {

EmbeddingJob::EmbeddingJob(PoolingWork work, Engine& engine, ServerState& state,
                           const std::shared_ptr<HttpSession>& session)
    : work_(std::move(work)), engine_(engine), state_(state), session_(session) {}

void EmbeddingJob::start() {
  auto self = shared_from_this();
  auto s = session_.lock();
  if (!s) return;
  s->set_listener(self);
  const size_t n = work_.inputs.size();
  id_ = make_response_id(work_.id_prefix);
  const std::string& id = id_;
  request_ids_.resize(n);
  live_.assign(n, false);
  embeddings_.resize(n);
  num_unfinished_ = n;
  for (size_t i = 0; i < n; ++i) {
    request_ids_[i] = fmt::format("{}-{}", id, i);
    GenerateRequest req;
    req.request_id = request_ids_[i];
    req.prompt_tokens = std::move(work_.inputs[i]);
    req.sampling.pooling = work_.pooling;
    if (i < work_.second_segment.size()) {
      req.sampling.second_segment_start = work_.second_segment[i];
    }
    req.stop.max_tokens = 1;
    Status st =
        engine_.add_request(std::move(req), [self, i, exec = s->executor()](RequestOutput out) {
          boost::asio::post(exec, [self, i, out = std::move(out)]() mutable {
            self->on_output(i, std::move(out));
          });
        });
    if (!st.ok()) {
      state_.metrics().count_rejection(st.code() == StatusCode::kResourceExhausted
                                           ? Rejection::kQueueFull
                                           : Rejection::kInvalid);
      abort_all();
      fail(from_status(st, work_.field, state_.config().retry_after_seconds));
      return;
    }
    live_[i] = true;
  }
}

void EmbeddingJob::on_connection_lost(AbortCause cause) {
  if (done_) return;
  done_ = true;
  state_.metrics().count_abort(cause);
  abort_all();
}

void EmbeddingJob::abort_all() {
  for (size_t i = 0; i < request_ids_.size(); ++i) {
    if (live_[i]) engine_.abort(request_ids_[i]);
  }
}

void EmbeddingJob::fail(const ApiError& error) {
  done_ = true;
  if (auto s = session_.lock()) s->respond_error(error);
}

void EmbeddingJob::on_output(size_t i, RequestOutput out) {
  // Every engine request finished: the model may be unloaded once this handler returns.
  struct ReleaseWhenIdle {
    EmbeddingJob& job;
    ~ReleaseWhenIdle() {
      if (std::none_of(job.live_.begin(), job.live_.end(), [](bool live) { return live; })) {
        job.lease_.reset();
      }
    }
  } release_when_idle{*this};
  if (!out.finished || i >= live_.size()) return;
  live_[i] = false;
  state_.metrics().observe_finished(engine_.model_info().id, out);
  if (done_) return;
  if (out.finish_reason != FinishReason::kStop || out.embedding.empty()) {
    abort_all();
    if (out.finish_reason == FinishReason::kAbort) {
      fail(unavailable("The server is shutting down; the request was aborted",
                       state_.config().retry_after_seconds));
    } else if (out.error_code == StatusCode::kInvalidArgument) {
      fail(bad_request(out.error, work_.field));
    } else {
      fail(internal(out.error.empty() ? "embedding failed" : "embedding failed: " + out.error));
    }
    return;
  }
  prompt_tokens_ += out.usage.prompt_tokens;
  embeddings_[i] = std::move(out.embedding);
  if (--num_unfinished_ > 0) return;
  done_ = true;
  auto s = session_.lock();
  if (!s) return;
  HttpResponse r;
  r.body = work_.respond(embeddings_, prompt_tokens_, id_);
  s->respond(std::move(r));
}

}  // namespace pagoda::server
