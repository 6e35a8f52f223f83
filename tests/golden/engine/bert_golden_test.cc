// A BERT encoder through the public Engine, against the independent float64 PyTorch forward and
// Python WordPiece of tools/bert_fixture/make_bert_fixture.py (run by the ctest fixture
// `bert_fixture` into PAGODA_BERT_FIXTURE), in each form the fixture has: the GGUF it writes, the
// Hugging Face BertModel directory (safetensors + tokenizer.json) and that directory converted by
// `pagoda convert` (ctest `bert_convert`), and the fixture's nomic-bert GGUF. For each: the
// tokenizer's ids equal the oracle's, CLS- and mean-pooled embeddings of every text (all submitted
// at once, so several sequences share each step) have cosine >= 0.9999 with the reference, and
// generation is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <utility>

#include "pagoda/engine.h"

namespace pagoda {
namespace {

std::filesystem::path fixture_dir() {
  const char* dir = std::getenv("PAGODA_BERT_FIXTURE");
  return dir == nullptr ? std::filesystem::path() : std::filesystem::path(dir);
}

// The engine settings every case here uses: a small KV cache (encoders bypass it), 16 sequences
// of up to 256 batched tokens.
EngineConfig encoder_config(const std::filesystem::path& model, int32_t num_threads = 2) {
  EngineConfig c;
  c.model_path = model.string();
  c.kv_cache_bytes = 4ull << 20;
  c.max_num_seqs = 16;
  c.max_num_batched_tokens = 256;
  c.num_threads = num_threads;
  return c;
}

nlohmann::json read_reference(const std::filesystem::path& file) {
  std::ifstream in(file);
  return nlohmann::json::parse(in);
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

const char* pooling_name(PoolingType p) {
  return p == PoolingType::kCls ? "cls" : "mean";
}

// Submits every case's token ids once per pooling, all at once (several sequences share each
// step), after checking the tokenizer's ids against the oracle's; returns the finished outputs
// keyed by case index + pooling name.
std::map<std::string, RequestOutput> embed_all(Engine& e, const nlohmann::json& cases,
                                               const std::vector<PoolingType>& poolings) {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, RequestOutput> done;
  size_t expected = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const nlohmann::json& cs = cases[i];
    const auto ids = e.tokenize(cs["text"].get<std::string>(), true, false);
    EXPECT_EQ(ids, cs["token_ids"].get<std::vector<int32_t>>()) << cs["text"];
    for (PoolingType p : poolings) {
      GenerateRequest r;
      r.request_id = std::to_string(i) + pooling_name(p);
      r.prompt_tokens = cs["token_ids"].get<std::vector<int32_t>>();
      r.sampling.pooling = p;
      r.stop.max_tokens = 1;
      const std::string id = r.request_id;
      const Status st = e.add_request(std::move(r), [&, id](RequestOutput out) {
        if (!out.finished) return;
        std::lock_guard<std::mutex> lock(mu);
        done[id] = std::move(out);
        cv.notify_all();
      });
      EXPECT_TRUE(st.ok()) << st.to_string();
      if (st.ok()) ++expected;
    }
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return done.size() == expected; });
  return done;
}

// Every output's cosine with the reference row `prefix` + pooling name (EXPECTed >= 0.9999);
// returns the worst.
double worst_cosine(const std::map<std::string, RequestOutput>& done, const nlohmann::json& cases,
                    const std::string& prefix = "") {
  double worst = 1.0;
  for (const auto& [id, out] : done) {
    EXPECT_EQ(out.finish_reason, FinishReason::kStop) << out.error;
    const size_t i = std::stoul(id);
    const std::string kind = prefix + id.substr(std::to_string(i).size());
    const double cos = cosine(out.embedding, cases[i][kind].get<std::vector<double>>());
    worst = std::min(worst, cos);
    EXPECT_GE(cos, 0.9999) << cases[i]["text"] << " " << kind;
  }
  return worst;
}

class BertGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(BertGolden, TokenizerAndPooledEmbeddingsMatchTheTorchReference) {
  const std::filesystem::path dir = fixture_dir();
  if (dir.empty() || !std::filesystem::exists(dir / "bert_reference.json")) {
    GTEST_SKIP() << "PAGODA_BERT_FIXTURE not set or empty (run through ctest: the bert_fixture "
                    "test writes it with tools/bert_fixture/make_bert_fixture.py)";
  }
  const nlohmann::json ref = read_reference(dir / "bert_reference.json");
  auto engine = Engine::create(encoder_config(dir / GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  const ModelInfo& info = e.model_info();
  EXPECT_TRUE(info.is_encoder);
  EXPECT_EQ(info.architecture, "bert");
  EXPECT_EQ(info.default_pooling, PoolingType::kCls);
  EXPECT_EQ(info.hidden_size, ref["hidden"].get<int32_t>());

  const std::map<std::string, RequestOutput> done =
      embed_all(e, ref["cases"], {PoolingType::kCls, PoolingType::kMean});
  const double worst = worst_cosine(done, ref["cases"]);
  const size_t expected = done.size();
  EXPECT_EQ(expected, 2 * ref["cases"].size());
  std::printf("%s: worst cosine vs the float64 torch reference %.7f over %zu embeddings\n",
              GetParam(), worst, expected);

  GenerateRequest gen;
  gen.request_id = "gen";
  gen.prompt_tokens = {2, 5, 3};
  const Status st = e.add_request(std::move(gen), [](RequestOutput) {});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("encoder"), std::string::npos) << st.message();
}

// The cross-encoder (BertForSequenceClassification): every query/document pair as [CLS] q [SEP]
// d [SEP] with token types 0/1, rank pooling (CLS -> pooler + tanh -> classifier), all pairs in
// flight together; the raw score must match the float64 oracle's.
class BertRerankGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(BertRerankGolden, PairScoresMatchTheTorchReference) {
  const std::filesystem::path dir = fixture_dir();
  if (dir.empty() || !std::filesystem::exists(dir / "bert_reference.json")) {
    GTEST_SKIP() << "PAGODA_BERT_FIXTURE not set or empty (run through ctest)";
  }
  const nlohmann::json ref = read_reference(dir / "bert_reference.json");
  auto engine = Engine::create(encoder_config(dir / GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  EXPECT_EQ(e.model_info().default_pooling, PoolingType::kRank);
  EXPECT_EQ(e.model_info().num_labels, 1);

  std::mutex mu;
  std::condition_variable cv;
  std::map<size_t, RequestOutput> done;
  const nlohmann::json& pairs = ref["pairs"];
  ASSERT_GT(pairs.size(), 0u);
  for (size_t i = 0; i < pairs.size(); ++i) {
    const nlohmann::json& p = pairs[i];
    // The server's pair encoding: the query's ids, then the document's without its [CLS].
    std::vector<int32_t> ids = e.tokenize(p["query"].get<std::string>(), true, false);
    const auto second = static_cast<int32_t>(ids.size());
    const auto doc = e.tokenize(p["document"].get<std::string>(), true, false);
    ASSERT_GE(doc.size(), 2u);
    ids.insert(ids.end(), doc.begin() + 1, doc.end());
    EXPECT_EQ(ids, p["token_ids"].get<std::vector<int32_t>>()) << p["document"];
    const auto types = p["token_type_ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(std::count(types.begin(), types.end(), 0), second);
    GenerateRequest r;
    r.request_id = "pair" + std::to_string(i);
    r.prompt_tokens = ids;
    r.sampling.pooling = PoolingType::kRank;
    r.sampling.second_segment_start = second;
    r.stop.max_tokens = 1;
    ASSERT_TRUE(e.add_request(std::move(r), [&, i](RequestOutput out) {
                   if (!out.finished) return;
                   std::lock_guard<std::mutex> lock(mu);
                   done[i] = std::move(out);
                   cv.notify_all();
                 }).ok());
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done.size() == pairs.size(); });
  }
  double worst = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const RequestOutput& out = done[i];
    ASSERT_EQ(out.finish_reason, FinishReason::kStop) << out.error;
    ASSERT_EQ(out.embedding.size(), 1u);
    const double want = pairs[i]["score"].get<double>();
    const double diff = std::fabs(out.embedding[0] - want);
    worst = std::max(worst, diff);
    EXPECT_LE(diff, 1e-4 * std::max(1.0, std::fabs(want))) << pairs[i]["document"];
  }
  std::printf("%s: worst |score - float64 torch score| %.3g over %zu pairs\n", GetParam(), worst,
              pairs.size());
}

INSTANTIATE_TEST_SUITE_P(Forms, BertRerankGolden,
                         ::testing::Values("bert-rerank-hf", "bert-rerank-hf.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           return std::string(p.param) == "bert-rerank-hf"
                                      ? std::string("HfDir")
                                      : std::string("HfConverted");
                         });

// An embedding model has no classifier head: rank pooling is refused, naming it.
TEST(BertRerankGolden, RankPoolingNeedsAClassifierHead) {
  const std::filesystem::path dir = fixture_dir();
  if (dir.empty() || !std::filesystem::exists(dir / "bert.gguf")) GTEST_SKIP();
  auto engine = Engine::create(encoder_config(dir / "bert.gguf", /*num_threads=*/1));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ((*engine)->model_info().num_labels, 0);
  GenerateRequest r;
  r.request_id = "rank";
  r.prompt_tokens = {2, 5, 3};
  r.sampling.pooling = PoolingType::kRank;
  const Status st = (*engine)->add_request(std::move(r), [](RequestOutput) {});
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("classifier"), std::string::npos) << st.message();
}

INSTANTIATE_TEST_SUITE_P(Forms, BertGolden,
                         ::testing::Values("bert.gguf", "bert-hf", "bert-hf.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& p) {
                           const std::string s = p.param;
                           return s == "bert.gguf" ? std::string("Gguf")
                                  : s == "bert-hf" ? std::string("HfDir")
                                                   : std::string("HfConverted");
                         });

// nomic-bert (nomic-embed-text's GGUF layout: rotary positions, fused attn_qkv, SwiGLU), against
// the fixture's float64 forward written from the HF nomic-bert modeling code: the file's mean
// pooling is the default, and mean and CLS rows (CLS: one token's row, so any positional error
// shows) of every text, the longest 37 tokens, have cosine >= 0.9999. The same file after
// `pagoda quantize ... Q8_0` (ctest nomic_quantize; the form nomic-embed is usually downloaded
// in) is checked the same way against the float64 forward on its dequantised Q8_0 weights (the
// fixture's q8_0_* rows), so the quantised matmul path is held to the same bound.
struct NomicForm {
  const char* file;
  const char* reference_prefix;
};

class NomicBertGolden : public ::testing::TestWithParam<NomicForm> {};

TEST_P(NomicBertGolden, PooledEmbeddingsMatchTheTorchReference) {
  const std::filesystem::path dir = fixture_dir();
  if (dir.empty() || !std::filesystem::exists(dir / "nomic_reference.json")) {
    GTEST_SKIP() << "PAGODA_BERT_FIXTURE not set or empty (run through ctest)";
  }
  const nlohmann::json ref = read_reference(dir / "nomic_reference.json");
  auto engine = Engine::create(encoder_config(dir / GetParam().file));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  Engine& e = **engine;
  EXPECT_TRUE(e.model_info().is_encoder);
  EXPECT_EQ(e.model_info().architecture, "nomic-bert");
  EXPECT_EQ(e.model_info().default_pooling, PoolingType::kMean);
  EXPECT_EQ(e.model_info().hidden_size, ref["hidden"].get<int32_t>());
  const std::map<std::string, RequestOutput> done =
      embed_all(e, ref["cases"], {PoolingType::kMean, PoolingType::kCls});
  EXPECT_EQ(done.size(), 2 * ref["cases"].size());
  const double worst = worst_cosine(done, ref["cases"], GetParam().reference_prefix);
  std::printf(
      "%s: worst cosine vs the float64 torch reference %.9f (1 - cos %.2g) over %zu "
      "embeddings\n",
      GetParam().file, worst, 1.0 - worst, done.size());
}

INSTANTIATE_TEST_SUITE_P(Forms, NomicBertGolden,
                         ::testing::Values(NomicForm{"nomic.gguf", ""},
                                           NomicForm{"nomic-Q8_0.gguf", "q8_0_"}),
                         [](const ::testing::TestParamInfo<NomicForm>& p) {
                           return std::string(*p.param.reference_prefix == 0 ? "F32" : "Q8_0");
                         });

// Variants llama.cpp's converter never writes for nomic-embed are refused, naming what is wrong:
// the MoE architecture and a rotary fraction other than 1; so are broken files (a missing
// ffn_gate, an attn_qkv of the wrong shape), naming the tensor.
TEST(NomicBertRefusals, UnsupportedVariantsAreRefusedByName) {
  const std::filesystem::path dir = fixture_dir();
  if (dir.empty() || !std::filesystem::exists(dir / "nomic-moe.gguf")) GTEST_SKIP();
  for (const auto& [file, needle] :
       {std::pair<const char*, const char*>{"nomic-moe.gguf", "nomic-bert-moe"},
        {"nomic-half-rope.gguf", "rotary fraction"},
        {"nomic-no-gate.gguf", "blk.1.ffn_gate.weight"},
        {"nomic-short-qkv.gguf", "blk.0.attn_qkv.weight"}}) {
    auto engine = Engine::create(encoder_config(dir / file, /*num_threads=*/1));
    ASSERT_FALSE(engine.ok()) << file;
    EXPECT_NE(engine.status().message().find(needle), std::string::npos)
        << engine.status().to_string();
  }
}

}  // namespace
}  // namespace pagoda
