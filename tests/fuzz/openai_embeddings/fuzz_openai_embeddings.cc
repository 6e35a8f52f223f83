// fuzz_openai_embeddings: the input is a POST /v1/embeddings body. Any input must give a spec or
// an ApiError with a JSON body, never a crash, a hang or an allocation beyond the limits; a spec
// has 1..max_embedding_inputs non-empty inputs of vocabulary ids that fit the context, and its
// response object (with one embedding per input) is JSON whose base64 form has 4 * ceil(4d / 3)
// characters per embedding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/openai_embeddings.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;
  using namespace pagoda::server;
  static pagoda::testing::FakeEngine engine;
  static const ServerConfig config = [] {
    ServerConfig c;
    c.pooling = pagoda::PoolingType::kMean;
    c.max_embedding_inputs = 64;
    return c;
  }();
  const std::string body(reinterpret_cast<const char*>(data), size);
  EmbeddingsSpec spec;
  if (auto err = parse_embeddings_request(body, engine, config, spec)) {
    check(err->status >= 400 && err->status <= 599);
    check(!nlohmann::json::parse(err->body(), nullptr, false).is_discarded());
    return 0;
  }
  const pagoda::ModelInfo& info = engine.model_info();
  check(!spec.inputs.empty() && spec.inputs.size() <= 64);
  check(spec.pooling == pagoda::PoolingType::kMean);
  std::vector<std::vector<float>> embeddings;
  for (const auto& in : spec.inputs) {
    check(!in.empty() && static_cast<int64_t>(in.size()) < info.context_length);
    for (int32_t id : in)
      check(id >= 0 && id < info.vocab_size);
    embeddings.push_back(std::vector<float>(in.size() % 7 + 1, 0.5f));
  }
  const nlohmann::json r =
      nlohmann::json::parse(embeddings_response(spec, embeddings, 1), nullptr, false);
  check(!r.is_discarded() && r["data"].size() == embeddings.size());
  if (spec.base64) {
    for (size_t i = 0; i < embeddings.size(); ++i) {
      const size_t bytes = embeddings[i].size() * 4;
      check(r["data"][i]["embedding"].get<std::string>().size() == (bytes + 2) / 3 * 4);
    }
  }
  return 0;
}
