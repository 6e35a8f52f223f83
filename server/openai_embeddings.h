// POST /v1/embeddings (OpenAI schema): parsing the body into an EmbeddingsSpec (tokenized
// inputs, the pooling to use, the encoding) and writing the response object. `input` is a
// string, an array of strings, an array of token ids, or an array of token-id arrays; every
// input is non-empty and fits the context. `encoding_format` is float (default) or base64
// (little-endian float32, as OpenAI's SDKs decode it); `dimensions` only where the model allows
// it (none of ours truncate: only the model's own size is accepted); `user` is accepted.
// Unknown fields are refused by name. Every rejection is an ApiError naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pagoda/engine.h"
#include "server/api_error.h"
#include "server/server_config.h"

namespace pagoda::server {

struct EmbeddingsSpec {
  std::string model;
  std::vector<std::vector<int32_t>> inputs;  // each non-empty, ids in [0, vocab)
  PoolingType pooling = PoolingType::kNone;  // never kNone after a successful parse
  bool base64 = false;
};

// The pooling /v1/embeddings uses for `info`: the server's --pooling, else the model's own
// (encoders), else none (decoders without --pooling serve no embeddings).
PoolingType embedding_pooling(const ModelInfo& info, const ServerConfig& config);

std::optional<ApiError> parse_embeddings_request(const std::string& body, const Engine& engine,
                                                 const ServerConfig& config, EmbeddingsSpec& out);

// The response object: one `embedding` per input, in order, and usage.prompt_tokens.
std::string embeddings_response(const EmbeddingsSpec& spec,
                                const std::vector<std::vector<float>>& embeddings,
                                int64_t prompt_tokens);

// RFC 4648 base64 of the float32 values' little-endian bytes.
std::string base64_floats(const std::vector<float>& values);

}  // namespace pagoda::server
