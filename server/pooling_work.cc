#include "server/pooling_work.h"

#include <ctime>

namespace pagoda::server {

PoolingWork embeddings_work(EmbeddingsSpec spec) {
  PoolingWork work;
  work.inputs = std::move(spec.inputs);
  work.pooling = spec.pooling;
  spec.inputs.clear();
  work.respond = [spec = std::move(spec)](const std::vector<std::vector<float>>& embeddings,
                                          int64_t prompt_tokens, const std::string& /*id*/) {
    return embeddings_response(spec, embeddings, prompt_tokens);
  };
  return work;
}

PoolingWork rerank_work(RerankSpec spec, bool score) {
  PoolingWork work;
  work.inputs = std::move(spec.inputs);
  work.second_segment = std::move(spec.second_segment);
  spec.inputs.clear();
  spec.second_segment.clear();
  work.pooling = PoolingType::kRank;
  work.id_prefix = score ? "score-" : "rerank-";
  work.field = score ? "text_2" : "documents";
  work.respond = [spec = std::move(spec), score](const std::vector<std::vector<float>>& logits,
                                                 int64_t prompt_tokens, const std::string& id) {
    return score ? score_response(spec, logits, prompt_tokens, id,
                                  static_cast<int64_t>(std::time(nullptr)))
                 : rerank_response(spec, logits, prompt_tokens, id);
  };
  return work;
}

}  // namespace pagoda::server
