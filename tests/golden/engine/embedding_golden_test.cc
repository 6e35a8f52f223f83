// Embedding (pooling) requests through the public Engine on the llama-F16 fixture, checked
// against the peer engine's logits (models/reference): an embedding e of the last position is
// the final-norm hidden state h / |h|, so output.weight · e is the peer's logit row divided by
// |h|; |h| is the ratio of the rows' standard deviations, and the top-64 logits must agree
// after scaling. Mean pooling is checked against the peer-derived oracle
// normalise(Σ_t |h_t| e_t), with e_t the last-position embedding of prefix t (causal model) and
// |h_t| from the peer's row std at position t. Also: chunked prefill and batching with
// generation do not change an embedding, and the request errors name their field.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>

#include "format/gguf_file.h"
#include "pagoda/engine.h"
#include "tensor/float16.h"
#include "test_support.h"

namespace pagoda {
namespace {

const char* kModel = "models/llama-F16.gguf";

std::string model_path() {
  return pagoda::testing::fixture(kModel).string();
}

nlohmann::json reference(const std::string& which) {
  std::ifstream in(pagoda::testing::fixture("models/reference/llama-F16." + which + ".json"));
  return nlohmann::json::parse(in);
}

EngineConfig config(int32_t max_batched = 512) {
  EngineConfig c;
  c.model_path = model_path();
  c.kv_cache_bytes = 8ull << 20;
  c.max_model_len = 256;
  c.max_num_seqs = 8;
  c.max_num_batched_tokens = max_batched;
  c.num_threads = 2;
  c.warm_up = false;
  return c;
}

// Runs every request to completion; returns their final outputs in order.
std::vector<RequestOutput> run_all(Engine& engine, std::vector<GenerateRequest> requests) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<RequestOutput> finals(requests.size());
  std::vector<std::vector<int32_t>> tokens(requests.size());
  size_t done = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    const Status st = engine.add_request(std::move(requests[i]), [&, i](RequestOutput out) {
      std::lock_guard<std::mutex> lock(mu);
      tokens[i].insert(tokens[i].end(), out.new_token_ids.begin(), out.new_token_ids.end());
      if (out.finished) {
        finals[i] = std::move(out);
        finals[i].new_token_ids = tokens[i];
        ++done;
        cv.notify_all();
      }
    });
    EXPECT_TRUE(st.ok()) << st.to_string();
    if (!st.ok()) return {};
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done == finals.size(); });
  return finals;
}

GenerateRequest embed_request(const std::string& id, std::vector<int32_t> prompt,
                              PoolingType pooling) {
  GenerateRequest r;
  r.request_id = id;
  r.prompt_tokens = std::move(prompt);
  r.sampling.pooling = pooling;
  r.stop.max_tokens = 1;
  return r;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// output.weight of the fixture, dequantised: [vocab][hidden].
std::vector<std::vector<float>> output_matrix() {
  auto file = format::GgufFile::open(model_path());
  EXPECT_TRUE(file.ok());
  std::vector<std::vector<float>> w;
  for (const format::GgufTensorInfo& t : (*file)->tensors()) {
    if (t.name != "output.weight") continue;
    EXPECT_EQ(t.dtype, tensor::DType::kF16);
    const auto cols = static_cast<size_t>(t.dims[0]), rows = static_cast<size_t>(t.dims[1]);
    const auto* p = reinterpret_cast<const uint16_t*>(t.bytes().data());
    w.assign(rows, std::vector<float>(cols));
    for (size_t r = 0; r < rows; ++r)
      for (size_t c = 0; c < cols; ++c)
        w[r][c] = tensor::fp16_to_fp32(p[r * cols + c]);
  }
  EXPECT_FALSE(w.empty()) << "output.weight not found";
  return w;
}

std::vector<double> project(const std::vector<std::vector<float>>& w, const std::vector<float>& e) {
  std::vector<double> z(w.size());
  for (size_t r = 0; r < w.size(); ++r) {
    double s = 0;
    for (size_t c = 0; c < e.size(); ++c)
      s += double{w[r][c]} * e[c];
    z[r] = s;
  }
  return z;
}

double stddev(const std::vector<double>& z) {
  double m = 0, v = 0;
  for (double x : z)
    m += x;
  m /= static_cast<double>(z.size());
  for (double x : z)
    v += (x - m) * (x - m);
  return std::sqrt(v / static_cast<double>(z.size()));
}

TEST(EmbeddingGolden, LastPoolingMatchesPeerLogits) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->model_info().hidden_size, 256);
  const auto w = output_matrix();
  for (const char* which : {"p1", "p2"}) {
    const nlohmann::json ref = reference(which);
    const auto prompt = ref["prompt_tokens"].get<std::vector<int32_t>>();
    const auto outs = run_all(**engine, {embed_request("e", prompt, PoolingType::kLast)});
    ASSERT_EQ(outs.size(), 1u);
    const RequestOutput& out = outs[0];
    EXPECT_EQ(out.finish_reason, FinishReason::kStop);
    EXPECT_TRUE(out.new_token_ids.empty());
    EXPECT_EQ(out.usage.prompt_tokens, static_cast<int32_t>(prompt.size()));
    ASSERT_EQ(out.embedding.size(), 256u);
    double norm = 0;
    for (float v : out.embedding)
      norm += double{v} * v;
    EXPECT_NEAR(norm, 1.0, 1e-5);
    const nlohmann::json& pos = ref["positions"][prompt.size() - 1];
    const std::vector<double> z = project(w, out.embedding);
    const double std_ref = pos["std"].get<double>();
    const double scale = std_ref / stddev(z);  // = |h|
    double worst = 0;
    for (const auto& pair : pos["top"]) {
      const auto id = pair[0].get<size_t>();
      worst = std::max(worst, std::fabs(scale * z[id] - pair[1].get<double>()) / std_ref);
    }
    EXPECT_LE(worst, 0.03) << which;
    std::printf("%s: last pooling, max |dlogit|/std = %.4f\n", which, worst);
  }
}

TEST(EmbeddingGolden, MeanPoolingMatchesPeerDerivedOracle) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  const auto w = output_matrix();
  const nlohmann::json ref = reference("p1");
  const auto prompt = ref["prompt_tokens"].get<std::vector<int32_t>>();
  std::vector<GenerateRequest> reqs;
  for (size_t t = 1; t <= prompt.size(); ++t) {
    reqs.push_back(embed_request("prefix" + std::to_string(t),
                                 std::vector<int32_t>(prompt.begin(), prompt.begin() + t),
                                 PoolingType::kLast));
  }
  reqs.push_back(embed_request("mean", prompt, PoolingType::kMean));
  const auto outs = run_all(**engine, std::move(reqs));
  ASSERT_EQ(outs.size(), prompt.size() + 1);
  std::vector<double> sum(256, 0.0);
  for (size_t t = 0; t < prompt.size(); ++t) {
    const std::vector<float>& e = outs[t].embedding;
    ASSERT_EQ(e.size(), 256u);
    const double h_norm = ref["positions"][t]["std"].get<double>() / stddev(project(w, e));
    for (size_t i = 0; i < 256; ++i)
      sum[i] += h_norm * e[i];
  }
  const std::vector<float> oracle(sum.begin(), sum.end());
  const double cos = cosine(outs.back().embedding, oracle);
  std::printf("mean pooling vs peer-derived oracle: cosine %.6f\n", cos);
  EXPECT_GE(cos, 0.9995);
  // Not the last-position embedding (the oracle is not trivially satisfied).
  EXPECT_LT(cosine(outs.back().embedding, outs[prompt.size() - 1].embedding), 0.99);
}

TEST(EmbeddingGolden, ChunkedPrefillAndBatchingWithGenerationKeepEmbeddings) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  const nlohmann::json ref = reference("p1");
  const auto prompt = ref["prompt_tokens"].get<std::vector<int32_t>>();
  const auto greedy = ref["greedy_tokens"].get<std::vector<int32_t>>();
  std::vector<float> solo_mean, solo_last;
  {
    auto engine = Engine::create(config());
    ASSERT_TRUE(engine.ok());
    auto outs = run_all(**engine, {embed_request("m", prompt, PoolingType::kMean),
                                   embed_request("l", prompt, PoolingType::kLast)});
    solo_mean = outs[0].embedding;
    solo_last = outs[1].embedding;
  }
  // An 8-token step budget: the 12-token prompts take two chunks, and a generation request
  // shares the steps with them.
  auto engine = Engine::create(config(8));
  ASSERT_TRUE(engine.ok());
  GenerateRequest gen;
  gen.request_id = "gen";
  gen.prompt_tokens = prompt;
  gen.sampling.temperature = 0;
  gen.stop.max_tokens = static_cast<int32_t>(greedy.size());
  gen.stop.ignore_eos = true;
  const int64_t steps_before = (*engine)->stats().num_steps;
  auto outs = run_all(**engine, {std::move(gen), embed_request("m", prompt, PoolingType::kMean),
                                 embed_request("l", prompt, PoolingType::kLast)});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[0].new_token_ids, greedy);
  EXPECT_GE(cosine(outs[1].embedding, solo_mean), 0.99999);
  EXPECT_GE(cosine(outs[2].embedding, solo_last), 0.99999);
  // Three 12-token prompts and 8 decodes in 8-token steps: sharing steps needs fewer than
  // running them one after another (2 + 2 + 2 + 7 steps).
  EXPECT_LT((*engine)->stats().num_steps - steps_before, 13);
}

TEST(EmbeddingGolden, RequestErrors) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto engine = Engine::create(config());
  ASSERT_TRUE(engine.ok());
  GenerateRequest r = embed_request("n2", {1, 2, 3}, PoolingType::kMean);
  r.n = 2;
  Status st = (*engine)->add_request(std::move(r), [](RequestOutput) {});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("n must be 1"), std::string::npos) << st.message();
  r = embed_request("grammar", {1, 2, 3}, PoolingType::kLast);
  r.sampling.structured.kind = StructuredOutputs::Kind::kJsonObject;
  st = (*engine)->add_request(std::move(r), [](RequestOutput) {});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("structured"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace pagoda
