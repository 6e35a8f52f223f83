// Cross-encoder scoring: POST /v1/rerank and /rerank (the Cohere / Jina body, as vLLM and
// llama-server accept it) and POST /v1/score (vLLM). Parsing a body into a RerankSpec (every
// query/document pair tokenized as [CLS] query [SEP] document [SEP], the document part's token
// type 1) and writing the responses. Each pair's relevance score is the sigmoid of the model's
// single classifier output (sentence-transformers' CrossEncoder default for one label, and what
// vLLM returns); a model without a one-label classifier head is refused with a 400 naming
// `model`. Unknown fields are refused by name; every rejection is an ApiError naming the field.
//
//   rerank: {model, query: string, documents: [string | {text}], top_n?, return_documents?}
//           -> {id, model, results: [{index, relevance_score, document?: {text}}] (by score,
//              descending, at most top_n), usage: {prompt_tokens, total_tokens}}
//   score:  {model, text_1: string | [string], text_2: string | [string]} (1 to 1, 1 to N, or
//           N to N) -> {id, object: "list", created, model, data: [{index, object: "score",
//           score}], usage}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pagoda/engine.h"
#include "server/api_error.h"
#include "server/server_config.h"

namespace pagoda::server {

struct RerankSpec {
  std::string model;
  std::vector<std::vector<int32_t>> inputs;  // one per pair: [CLS] a [SEP] b [SEP]
  std::vector<int32_t> second_segment;       // per pair: where b starts
  std::vector<std::string> documents;        // rerank: each document's text (return_documents)
  size_t top_n = 0;                          // rerank: results kept (0: all)
  bool return_documents = true;
};

// POST /v1/rerank and /rerank.
std::optional<ApiError> parse_rerank_request(const std::string& body, const Engine& engine,
                                             const ServerConfig& config, RerankSpec& out);
// POST /v1/score.
std::optional<ApiError> parse_score_request(const std::string& body, const Engine& engine,
                                            const ServerConfig& config, RerankSpec& out);

// The relevance score of a classifier output (its sigmoid).
double relevance_score(float logit);

// The response bodies: `logits` one classifier output row per pair, in order.
std::string rerank_response(const RerankSpec& spec, const std::vector<std::vector<float>>& logits,
                            int64_t prompt_tokens, const std::string& id);
std::string score_response(const RerankSpec& spec, const std::vector<std::vector<float>>& logits,
                           int64_t prompt_tokens, const std::string& id, int64_t created);

}  // namespace pagoda::server
