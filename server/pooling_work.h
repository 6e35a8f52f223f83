// PoolingWork: what a pooling request computes (one engine request per input: the inputs of
// /v1/embeddings, or the query/document pairs of /v1/rerank and /v1/score on a cross-encoder) and
// how its response body is written. EmbeddingJob runs it over HTTP, run_offline_pooling in
// `pagoda run-batch`, so both answer the same bodies.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "pagoda/sampling_params.h"
#include "server/openai_embeddings.h"
#include "server/openai_rerank.h"

namespace pagoda::server {

struct PoolingWork {
  std::vector<std::vector<int32_t>> inputs;  // one engine request each
  std::vector<int32_t> second_segment;       // empty, or per input (sentence pairs)
  PoolingType pooling = PoolingType::kNone;
  std::string id_prefix = "embd-";  // of the response id
  std::string field = "input";      // the request field errors name
  // The response body from every input's output (in order), the prompt tokens and the id.
  std::function<std::string(const std::vector<std::vector<float>>&, int64_t, const std::string&)>
      respond;
};

// /v1/embeddings.
PoolingWork embeddings_work(EmbeddingsSpec spec);
// /v1/rerank (score false) or /v1/score: rank pooling over the pairs.
PoolingWork rerank_work(RerankSpec spec, bool score);

}  // namespace pagoda::server
