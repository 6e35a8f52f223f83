// run_offline_pooling: one parsed pooling request (/v1/embeddings, /v1/rerank, /v1/score; a
// PoolingWork) run to the body the server would answer, without HTTP (`pagoda run-batch`). It
// submits one engine request per input, collects the outputs on the engine thread and calls
// `done` exactly once with the status and body (the response, or an OpenAI error body).
#pragma once

#include "pagoda/engine.h"
#include "server/offline_completion.h"
#include "server/pooling_work.h"

namespace pagoda::server {

// `engine` must outlive the run; `done` is called on the engine thread, or from inside this call
// when a request is refused.
void run_offline_pooling(PoolingWork work, Engine& engine, OfflineDone done);

}  // namespace pagoda::server
