// EmbeddingJob: one pooling request in flight (/v1/embeddings; /v1/rerank and /v1/score with
// rank pooling). It submits one engine request per input (a pooling request: the engine computes
// the prompt in its ordinary step loop, batched with whatever else runs, and returns the pooled
// hidden state, or a cross-encoder's scores), collects the outputs on its connection's strand and
// answers one JSON response (PoolingWork::respond) once all have finished. A refused submit, a
// failed request or a lost connection aborts the rest.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "pagoda/engine.h"
#include "server/http_session.h"
#include "server/model_registry.h"
#include "server/pooling_work.h"

namespace pagoda::server {

class ServerState;

class EmbeddingJob : public ConnectionListener, public std::enable_shared_from_this<EmbeddingJob> {
 public:
  EmbeddingJob(PoolingWork work, Engine& engine, ServerState& state,
               const std::shared_ptr<HttpSession>& session);

  // On the session's strand: submits every input (answering the error if one is refused).
  void start();
  void on_connection_lost(AbortCause cause) override;
  // Keeps the model loaded while the job lives (until its last engine output).
  void hold(ModelLease lease) { lease_ = std::move(lease); }

 private:
  void on_output(size_t index, RequestOutput out);
  void fail(const ApiError& error);
  void abort_all();

  PoolingWork work_;
  std::string id_;
  Engine& engine_;
  ServerState& state_;
  ModelLease lease_;
  std::weak_ptr<HttpSession> session_;
  std::vector<std::string> request_ids_;
  std::vector<bool> live_;
  std::vector<std::vector<float>> embeddings_;
  int64_t prompt_tokens_ = 0;
  size_t num_unfinished_ = 0;
  bool done_ = false;
};

}  // namespace pagoda::server
