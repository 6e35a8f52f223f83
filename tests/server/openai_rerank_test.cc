// /v1/rerank, /rerank and /v1/score parsing and responses against the FakeEngine (a one-label
// cross-encoder: FakeEngineOptions::num_labels): each pair is [CLS] a [SEP] b [SEP] (the
// FakeEngine's tokenize adds only its BOS, so here: BOS a, then b without its BOS) with the
// second segment starting after a; every rejection names its field; results are sorted by the
// sigmoid of the classifier output (checked against std::exp), cut to top_n, with documents.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/openai_rerank.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

testing::FakeEngineOptions cross_encoder() {
  testing::FakeEngineOptions o;
  o.num_labels = 1;
  return o;
}

std::vector<int32_t> pair_ids(const Engine& e, const std::string& a, const std::string& b) {
  std::vector<int32_t> ids = e.tokenize(a, true, false);
  const std::vector<int32_t> bi = e.tokenize(b, true, false);
  ids.insert(ids.end(), bi.begin() + 1, bi.end());
  return ids;
}

TEST(OpenAiRerank, RerankPairsAndResponse) {
  testing::FakeEngine engine(cross_encoder());
  const ServerConfig cfg;
  RerankSpec spec;
  ASSERT_FALSE(parse_rerank_request(
      R"({"model":"fake-model","query":"qq","documents":["a",{"text":"bcd"},"ef"],"top_n":2})",
      engine, cfg, spec));
  ASSERT_EQ(spec.inputs.size(), 3u);
  EXPECT_EQ(spec.inputs[1], pair_ids(engine, "qq", "bcd"));
  EXPECT_EQ(spec.second_segment, (std::vector<int32_t>{3, 3, 3}));
  EXPECT_EQ(spec.documents, (std::vector<std::string>{"a", "bcd", "ef"}));
  EXPECT_EQ(spec.top_n, 2u);
  EXPECT_TRUE(spec.return_documents);
  const std::vector<std::vector<float>> logits = {{-1.0f}, {2.5f}, {0.25f}};
  const json r = json::parse(rerank_response(spec, logits, 17, "rerank-1"));
  EXPECT_EQ(r["id"], "rerank-1");
  EXPECT_EQ(r["model"], "fake-model");
  EXPECT_EQ(r["usage"]["total_tokens"], 17);
  ASSERT_EQ(r["results"].size(), 2u);
  EXPECT_EQ(r["results"][0]["index"], 1);
  EXPECT_EQ(r["results"][0]["document"]["text"], "bcd");
  EXPECT_NEAR(r["results"][0]["relevance_score"].get<double>(), 1 / (1 + std::exp(-2.5)), 1e-12);
  EXPECT_EQ(r["results"][1]["index"], 2);
  EXPECT_NEAR(r["results"][1]["relevance_score"].get<double>(), 1 / (1 + std::exp(-0.25)), 1e-12);
  ASSERT_FALSE(parse_rerank_request(
      R"({"query":"q","documents":["a","b"],"return_documents":false})", engine, cfg, spec));
  const json all = json::parse(rerank_response(spec, {{0.0f}, {1.0f}}, 1, "x"));
  ASSERT_EQ(all["results"].size(), 2u);
  EXPECT_FALSE(all["results"][0].contains("document"));
  EXPECT_EQ(all["results"][0]["index"], 1);
}

TEST(OpenAiRerank, ScoreShapes) {
  testing::FakeEngine engine(cross_encoder());
  const ServerConfig cfg;
  RerankSpec spec;
  ASSERT_FALSE(parse_score_request(R"({"text_1":"q","text_2":["a","bb"]})", engine, cfg, spec));
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[1], pair_ids(engine, "q", "bb"));
  ASSERT_FALSE(
      parse_score_request(R"({"text_1":["q","rr"],"text_2":["a","bb"]})", engine, cfg, spec));
  EXPECT_EQ(spec.inputs[1], pair_ids(engine, "rr", "bb"));
  EXPECT_EQ(spec.second_segment, (std::vector<int32_t>{2, 3}));
  ASSERT_FALSE(parse_score_request(R"({"text_1":"q","text_2":"a"})", engine, cfg, spec));
  ASSERT_EQ(spec.inputs.size(), 1u);
  const json r = json::parse(score_response(spec, {{0.0f}}, 4, "score-1", 123));
  EXPECT_EQ(r["object"], "list");
  EXPECT_EQ(r["created"], 123);
  ASSERT_EQ(r["data"].size(), 1u);
  EXPECT_EQ(r["data"][0]["object"], "score");
  EXPECT_DOUBLE_EQ(r["data"][0]["score"].get<double>(), 0.5);
}

TEST(OpenAiRerank, RejectionsNameTheField) {
  testing::FakeEngine engine(cross_encoder());
  const ServerConfig cfg;
  const auto param = [&](const std::string& body, bool score) {
    RerankSpec spec;
    auto err = score ? parse_score_request(body, engine, cfg, spec)
                     : parse_rerank_request(body, engine, cfg, spec);
    EXPECT_TRUE(err.has_value()) << body;
    if (!err) return std::string("<accepted>");
    EXPECT_TRUE(err->status == 400 || err->status == 404) << body;
    EXPECT_FALSE(json::parse(err->body(), nullptr, false).is_discarded());
    return err->param;
  };
  EXPECT_EQ(param(R"({"documents":["a"]})", false), "query");
  EXPECT_EQ(param(R"({"query":"","documents":["a"]})", false), "query");
  EXPECT_EQ(param(R"({"query":"q"})", false), "documents");
  EXPECT_EQ(param(R"({"query":"q","documents":[]})", false), "documents");
  EXPECT_EQ(param(R"({"query":"q","documents":"a"})", false), "documents");
  EXPECT_EQ(param(R"({"query":"q","documents":["a",""]})", false), "documents[1]");
  EXPECT_EQ(param(R"({"query":"q","documents":[3]})", false), "documents[0]");
  EXPECT_EQ(param(R"({"query":"q","documents":[{"txt":"a"}]})", false), "documents[0].txt");
  EXPECT_EQ(param(R"({"query":"q","documents":[{}]})", false), "documents[0]");
  EXPECT_EQ(param(R"({"query":"q","documents":[{"text":1}]})", false), "documents[0].text");
  EXPECT_EQ(param(R"({"query":"q","documents":["a"],"top_n":-1})", false), "top_n");
  EXPECT_EQ(param(R"({"query":"q","documents":["a"],"top_n":"2"})", false), "top_n");
  EXPECT_EQ(param(R"({"query":"q","documents":["a"],"return_documents":1})", false),
            "return_documents");
  EXPECT_EQ(param(R"({"query":"q","documents":["a"],"rank_fields":["x"]})", false), "rank_fields");
  EXPECT_EQ(param(R"({"query":"q","documents":["a"],"model":"other"})", false), "model");
  EXPECT_EQ(param(R"({"query":"q","documents":[")" + std::string(300, 'x') + R"("]})", false),
            "documents[0]");
  EXPECT_EQ(param(R"({"text_2":"a"})", true), "text_1");
  EXPECT_EQ(param(R"({"text_1":"a"})", true), "text_2");
  EXPECT_EQ(param(R"({"text_1":["a","b"],"text_2":["a","b","c"]})", true), "text_1");
  EXPECT_EQ(param(R"({"text_1":"q","text_2":["a",""]})", true), "text_2[1]");
  EXPECT_EQ(param(R"({"text_1":"q","text_2":[]})", true), "text_2");
  EXPECT_EQ(param(R"({"text_1":"q","text_2":"a","encoding_format":"float"})", true),
            "encoding_format");
  EXPECT_EQ(param(R"([1])", true), "");
  ServerConfig few;
  few.max_embedding_inputs = 2;
  RerankSpec spec;
  auto err = parse_rerank_request(R"({"query":"q","documents":["a","b","c"]})", engine, few, spec);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "documents");
}

// A model without a classifier head answers rerank and score with a 400 naming `model`.
TEST(OpenAiRerank, ModelWithoutClassifierIsRefused) {
  testing::FakeEngine engine;  // num_labels 0
  const ServerConfig cfg;
  RerankSpec spec;
  auto err = parse_rerank_request(R"({"query":"q","documents":["a"]})", engine, cfg, spec);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->status, 400);
  EXPECT_EQ(err->param, "model");
  EXPECT_NE(err->message.find("classifier"), std::string::npos) << err->message;
  err = parse_score_request(R"({"text_1":"q","text_2":"a"})", engine, cfg, spec);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->param, "model");
}

}  // namespace
}  // namespace pagoda::server
