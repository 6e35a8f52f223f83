// /v1/embeddings request parsing and response encoding against the FakeEngine: input shapes
// (string, strings, token ids, token-id arrays) and their tokens, every rejection naming its
// field, the pooling a server serves, and base64 against RFC 4648's published examples applied
// to the IEEE-754 bytes of known floats.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/openai_embeddings.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

ServerConfig mean_config() {
  ServerConfig c;
  c.pooling = PoolingType::kMean;
  return c;
}

TEST(OpenAiEmbeddings, InputShapesTokenize) {
  testing::FakeEngine engine;
  const ServerConfig cfg = mean_config();
  EmbeddingsSpec spec;
  ASSERT_FALSE(
      parse_embeddings_request(R"({"model":"fake-model","input":"ab"})", engine, cfg, spec));
  ASSERT_EQ(spec.inputs.size(), 1u);
  EXPECT_EQ(spec.inputs[0], engine.tokenize("ab", true, false));
  EXPECT_EQ(spec.pooling, PoolingType::kMean);
  EXPECT_FALSE(spec.base64);
  EXPECT_EQ(spec.model, "fake-model");
  ASSERT_FALSE(parse_embeddings_request(
      R"({"input":["a","bc"],"encoding_format":"base64","user":"u1","dimensions":null})", engine,
      cfg, spec));
  ASSERT_EQ(spec.inputs.size(), 2u);
  EXPECT_EQ(spec.inputs[1], engine.tokenize("bc", true, false));
  EXPECT_TRUE(spec.base64);
  ASSERT_FALSE(parse_embeddings_request(R"({"input":[5,6,7]})", engine, cfg, spec));
  ASSERT_EQ(spec.inputs.size(), 1u);
  EXPECT_EQ(spec.inputs[0], (std::vector<int32_t>{5, 6, 7}));
  ASSERT_FALSE(parse_embeddings_request(R"({"input":[[5],[6,7],"x"]})", engine, cfg, spec));
  ASSERT_EQ(spec.inputs.size(), 3u);
  EXPECT_EQ(spec.inputs[1], (std::vector<int32_t>{6, 7}));
}

TEST(OpenAiEmbeddings, RejectionsNameTheField) {
  testing::FakeEngine engine;  // context 256, vocab 259, hidden_size 0
  const ServerConfig cfg = mean_config();
  const auto param = [&](const std::string& body) {
    EmbeddingsSpec spec;
    auto err = parse_embeddings_request(body, engine, cfg, spec);
    EXPECT_TRUE(err.has_value()) << body;
    if (!err) return std::string("<accepted>");
    EXPECT_TRUE(err->status == 400 || err->status == 404) << body;
    EXPECT_FALSE(json::parse(err->body(), nullptr, false).is_discarded());
    return err->param;
  };
  EXPECT_EQ(param(R"({"model":"fake-model"})"), "input");
  EXPECT_EQ(param(R"({"input":""})"), "input");
  EXPECT_EQ(param(R"({"input":[]})"), "input");
  EXPECT_EQ(param(R"({"input":[""]})"), "input");
  EXPECT_EQ(param(R"({"input":[[]]})"), "input");
  EXPECT_EQ(param(R"({"input":[1,-1]})"), "input");
  EXPECT_EQ(param(R"({"input":[259]})"), "input");
  EXPECT_EQ(param(R"({"input":[1.5]})"), "input");
  EXPECT_EQ(param(R"({"input":[[1],{"a":1}]})"), "input");
  EXPECT_EQ(param(R"({"input":7})"), "input");
  EXPECT_EQ(param(R"({"input":")" + std::string(300, 'x') + R"("})"), "input");  // > context
  EXPECT_EQ(param(R"({"input":"x","encoding_format":"int8"})"), "encoding_format");
  EXPECT_EQ(param(R"({"input":"x","encoding_format":1})"), "encoding_format");
  EXPECT_EQ(param(R"({"input":"x","dimensions":8})"), "dimensions");
  EXPECT_EQ(param(R"({"input":"x","dimensions":-1})"), "dimensions");
  EXPECT_EQ(param(R"({"input":"x","user":3})"), "user");
  EXPECT_EQ(param(R"({"input":"x","model":"other"})"), "model");
  EXPECT_EQ(param(R"({"input":"x","truncate_prompt_tokens":4})"), "truncate_prompt_tokens");
  EXPECT_EQ(param(R"([1])"), "");
  ServerConfig many = cfg;
  many.max_embedding_inputs = 2;
  EmbeddingsSpec spec;
  auto err = parse_embeddings_request(R"({"input":["a","b","c"]})", engine, many, spec);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "input");
  // A decoder without --pooling serves no embeddings.
  err = parse_embeddings_request(R"({"input":"a"})", engine, ServerConfig{}, spec);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->param, "model");
  EXPECT_NE(err->message.find("--pooling"), std::string::npos);
}

TEST(OpenAiEmbeddings, Base64IsTheLittleEndianFloat32Bytes) {
  // 1.0f = 00 00 80 3f; RFC 4648: "\0\0\x80?" -> "AACAPw==". 2 floats (8 bytes) -> one '='.
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  // -2.0f = 00 00 00 c0 -> "AAAAwA=="; 0.5f = 00 00 00 3f.
  EXPECT_EQ(base64_floats({-2.0f, 0.5f}), "AAAAwAAAAD8=");
  EXPECT_EQ(base64_floats({1.0f, 1.0f, 1.0f}), "AACAPwAAgD8AAIA/");
  EXPECT_EQ(base64_floats({}), "");
}

TEST(OpenAiEmbeddings, ResponseShape) {
  EmbeddingsSpec spec;
  spec.model = "m";
  const std::string body = embeddings_response(spec, {{0.1f, -0.25f}, {1.0f, 0.0f}}, 7);
  const json j = json::parse(body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "m");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][0]["object"], "embedding");
  EXPECT_EQ(j["data"][0]["embedding"][0].get<double>(), 0.1);  // shortest form of 0.1f
  EXPECT_EQ(j["data"][0]["embedding"][1].get<float>(), -0.25f);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  spec.base64 = true;
  EXPECT_EQ(json::parse(embeddings_response(spec, {{1.0f}}, 1))["data"][0]["embedding"],
            "AACAPw==");
}

}  // namespace
}  // namespace pagoda::server
