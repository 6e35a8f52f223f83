// fuzz_openai_rerank: the first byte picks the parser (even: /v1/rerank, odd: /v1/score), the
// rest is the body. Any input must give a spec or an ApiError with a JSON body, never a crash, a
// hang or an allocation beyond the limits. A spec has 1..max_embedding_inputs pairs, each of
// vocabulary ids that fit the context with its second segment strictly inside it; a rerank spec
// has one document text per pair. Its response (one score per pair) is JSON with results sorted
// by relevance_score, at most top_n of them, or one data entry per pair.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/openai_rerank.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 16)) return 0;
  using namespace pagoda::server;
  static pagoda::testing::FakeEngine engine([] {
    pagoda::testing::FakeEngineOptions o;
    o.num_labels = 1;
    return o;
  }());
  static const ServerConfig config = [] {
    ServerConfig c;
    c.max_embedding_inputs = 64;
    return c;
  }();
  const bool score = (data[0] & 1) != 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  RerankSpec spec;
  auto err = score ? parse_score_request(body, engine, config, spec)
                   : parse_rerank_request(body, engine, config, spec);
  if (err) {
    check(err->status >= 400 && err->status <= 599);
    check(!nlohmann::json::parse(err->body(), nullptr, false).is_discarded());
    return 0;
  }
  const pagoda::ModelInfo& info = engine.model_info();
  check(!spec.inputs.empty() && spec.inputs.size() <= 64);
  check(spec.second_segment.size() == spec.inputs.size());
  check(score || spec.documents.size() == spec.inputs.size());
  std::vector<std::vector<float>> logits;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    const auto& in = spec.inputs[i];
    check(static_cast<int64_t>(in.size()) < info.context_length);
    check(spec.second_segment[i] > 0 && static_cast<size_t>(spec.second_segment[i]) < in.size());
    for (int32_t id : in)
      check(id >= 0 && id < info.vocab_size);
    logits.push_back({static_cast<float>(in.size() % 13) - 6.0f});
  }
  if (score) {
    const nlohmann::json r =
        nlohmann::json::parse(score_response(spec, logits, 1, "score-x", 0), nullptr, false);
    check(!r.is_discarded() && r["data"].size() == logits.size());
    return 0;
  }
  const nlohmann::json r =
      nlohmann::json::parse(rerank_response(spec, logits, 1, "rerank-x"), nullptr, false);
  check(!r.is_discarded());
  const nlohmann::json& results = r["results"];
  check(results.size() == (spec.top_n > 0 ? std::min(spec.top_n, logits.size()) : logits.size()));
  for (size_t i = 1; i < results.size(); ++i) {
    check(results[i - 1]["relevance_score"].get<double>() >=
          results[i]["relevance_score"].get<double>());
  }
  return 0;
}
