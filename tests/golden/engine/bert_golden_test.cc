// A BERT encoder (GGUF `bert`) through the public Engine, against the independent float64
// PyTorch forward and Python WordPiece of tools/bert_fixture/make_bert_fixture.py (run by the
// ctest fixture `bert_fixture` into PAGODA_BERT_FIXTURE): the tokenizer's ids equal the oracle's,
// CLS- and mean-pooled embeddings of every text (all submitted at once, so several sequences
// share each step) have cosine >= 0.9999 with the reference, and generation is refused.
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>

#include "pagoda/engine.h"

namespace pagoda {
namespace {

std::filesystem::path fixture_dir() {
  const char* dir = std::getenv("PAGODA_BERT_FIXTURE");
  return dir == nullptr ? std::filesystem::path() : std::filesystem::path(dir);
}

double cosine(const std::vector<float>& a, const std::vector<double>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += a[i] * b[i];
    aa += double{a[i]} * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

TEST(BertGolden, TokenizerAndPooledEmbeddingsMatchTheTorchReference) {
  const std::filesystem::path dir = fixture_dir();
  if (dir.empty() || !std::filesystem::exists(dir / "bert_reference.json")) {
    GTEST_SKIP() << "PAGODA_BERT_FIXTURE not set or empty (run through ctest: the bert_fixture "
                    "test writes it with tools/bert_fixture/make_bert_fixture.py)";
  }
  std::ifstream in(dir / "bert_reference.json");
  const nlohmann::json ref = nlohmann::json::parse(in);
  EngineConfig c;
  c.model_path = (dir / "bert.gguf").string();
  c.kv_cache_bytes = 4ull << 20;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 256;
  c.num_threads = 2;
  auto engine = Engine::create(c);
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  const ModelInfo& info = e.model_info();
  EXPECT_TRUE(info.is_encoder);
  EXPECT_EQ(info.architecture, "bert");
  EXPECT_EQ(info.default_pooling, PoolingType::kCls);
  EXPECT_EQ(info.hidden_size, ref["hidden"].get<int32_t>());

  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, RequestOutput> done;
  size_t expected = 0;
  for (size_t i = 0; i < ref["cases"].size(); ++i) {
    const nlohmann::json& cs = ref["cases"][i];
    const auto ids = e.tokenize(cs["text"].get<std::string>(), true, false);
    EXPECT_EQ(ids, cs["token_ids"].get<std::vector<int32_t>>()) << cs["text"];
    for (PoolingType p : {PoolingType::kCls, PoolingType::kMean}) {
      GenerateRequest r;
      r.request_id = std::to_string(i) + (p == PoolingType::kCls ? "cls" : "mean");
      r.prompt_tokens = cs["token_ids"].get<std::vector<int32_t>>();
      r.sampling.pooling = p;
      r.stop.max_tokens = 1;
      const std::string id = r.request_id;
      ASSERT_TRUE(e.add_request(std::move(r), [&, id](RequestOutput out) {
                     if (!out.finished) return;
                     std::lock_guard<std::mutex> lock(mu);
                     done[id] = std::move(out);
                     cv.notify_all();
                   }).ok());
      ++expected;
    }
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done.size() == expected; });
  }
  double worst = 1.0;
  for (size_t i = 0; i < ref["cases"].size(); ++i) {
    const nlohmann::json& cs = ref["cases"][i];
    for (const char* kind : {"cls", "mean"}) {
      const RequestOutput& out = done[std::to_string(i) + kind];
      ASSERT_EQ(out.finish_reason, FinishReason::kStop) << out.error;
      const double cos = cosine(out.embedding, cs[kind].get<std::vector<double>>());
      worst = std::min(worst, cos);
      EXPECT_GE(cos, 0.9999) << cs["text"] << " " << kind;
    }
  }
  std::printf("bert: worst cosine vs the float64 torch reference %.7f over %zu embeddings\n", worst,
              expected);

  GenerateRequest gen;
  gen.request_id = "gen";
  gen.prompt_tokens = {2, 5, 3};
  const Status st = e.add_request(std::move(gen), [](RequestOutput) {});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("encoder"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace pagoda
