// The public Engine's non-generation surface on the fixture model: create() errors naming the
// config field, model_info, tokenize/detokenize against llama.cpp's tokenization of the reference
// prompt, request validation naming the field (vocab range, context length, sampling ranges,
// duplicate ids), and apply_chat_template wiring (bos/eos text, messages, tools,
// add_generation_prompt, raise_exception, malformed JSON) on a copy of the fixture carrying a
// small hand-written template whose rendering is computed by hand below.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "golden/gguf_copy.h"
#include "pagoda/engine.h"

namespace pagoda {
namespace {

std::string model_path() {
  return pagoda::testing::fixture("models/llama-Q8_0.gguf").string();
}

EngineConfig small_config(const std::string& path) {
  EngineConfig c;
  c.model_path = path;
  c.kv_cache_bytes = 8ull << 20;
  c.max_model_len = 256;
  c.max_num_seqs = 8;
  c.num_threads = 2;
  return c;
}

// Copies the fixture model with tokenizer.chat_template set to `tmpl`.
std::string write_model_with_template(const std::string& tmpl) {
  auto out = testing::write_gguf_copy(model_path(),
                                      {[&](format::GgufWriter& w) {
                                         w.set("tokenizer.chat_template",
                                               format::GgufWriteValue::string(tmpl));
                                       },
                                       nullptr},
                                      "engine_api_test_model.gguf");
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  return out.ok() ? *out : "";
}

TEST(EngineApi, CreateErrorsNameTheField) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  const auto message = [](EngineConfig c) {
    auto e = Engine::create(c);
    EXPECT_FALSE(e.ok());
    return e.ok() ? std::string() : e.status().message();
  };
  EngineConfig c = small_config(model_path());
  c.kv_cache_dtype = "q4_0";
  EXPECT_NE(message(c).find("kv_cache_dtype"), std::string::npos);
  c = small_config(model_path());
  c.max_model_len = 1 << 20;
  EXPECT_NE(message(c).find("max_model_len"), std::string::npos);
  c = small_config(model_path());
  c.kv_cache_bytes = 0;
  c.kv_cache_fraction = 1.5;
  EXPECT_NE(message(c).find("kv_cache_fraction"), std::string::npos);
  c = small_config(model_path());
  c.scheduling_policy = "lifo";
  EXPECT_NE(message(c).find("scheduling_policy"), std::string::npos);
  c = small_config(model_path());
  c.kv_cache_bytes = 4096;  // not even one sequence
  EXPECT_NE(message(c).find("KV"), std::string::npos);
  c = small_config("/nonexistent/model.gguf");
  EXPECT_FALSE(message(c).empty());
}

TEST(EngineApi, ModelInfoTokenizeAndValidation) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto created = Engine::create(small_config(model_path()));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Engine& e = **created;
  const ModelInfo& info = e.model_info();
  EXPECT_EQ(info.id, "llama-Q8_0");
  EXPECT_EQ(info.architecture, "llama");
  EXPECT_EQ(info.vocab_size, 32000);
  EXPECT_EQ(info.context_length, 256);
  EXPECT_EQ(info.bos_token, "<s>");
  EXPECT_EQ(info.eos_token, "</s>");
  EXPECT_TRUE(info.chat_template.empty());
  EXPECT_EQ(e.apply_chat_template("[]", "", true).status().code(), StatusCode::kFailedPrecondition);

  // llama.cpp's tokenization of the reference prompt (with BOS).
  std::ifstream in(pagoda::testing::fixture("models/reference/llama-Q8_0.p1.json"));
  const auto ref = nlohmann::json::parse(in);
  const auto ids = e.tokenize(ref["prompt"].get<std::string>(), true, true);
  EXPECT_EQ(ids, ref["prompt_tokens"].get<std::vector<int32_t>>());
  EXPECT_EQ(e.detokenize(ids), ref["prompt"].get<std::string>());

  const auto code_and_message = [&](GenerateRequest r) {
    const Status s = e.add_request(std::move(r), [](RequestOutput) {});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    return s.message();
  };
  GenerateRequest r;
  r.request_id = "x";
  r.prompt_tokens = {1, 32000};
  EXPECT_NE(code_and_message(r).find("prompt_tokens[1]"), std::string::npos);
  r.prompt_tokens = std::vector<int32_t>(250, 5);
  r.stop.max_tokens = 10;
  EXPECT_NE(code_and_message(r).find("max_model_len"), std::string::npos);
  r.prompt_tokens = {1, 5};
  r.sampling.temperature = -1;
  EXPECT_NE(code_and_message(r).find("temperature"), std::string::npos);
  r.sampling.temperature = 0;
  r.sampling.logit_bias = {{40000, 1.0f}};
  EXPECT_NE(code_and_message(r).find("logit_bias"), std::string::npos);
  e.shutdown();
  r.sampling.logit_bias.clear();
  EXPECT_EQ(e.add_request(r, [](RequestOutput) {}).code(), StatusCode::kFailedPrecondition);
}

TEST(EngineApi, ChatTemplateWiring) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  const std::string tmpl =
      "{{ bos_token }}{% if tools %}[tools:{{ tools | length }}]{% endif %}"
      "{% for m in messages %}{% if m.role == 'bad' %}{{ raise_exception('bad role') }}{% endif %}"
      "<{{ m.role }}>{{ m.content }}{{ eos_token }}{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}";
  const std::string path = write_model_with_template(tmpl);
  auto created = Engine::create(small_config(path));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  Engine& e = **created;
  EXPECT_EQ(e.model_info().chat_template, tmpl);
  const std::string msgs =
      R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])";
  auto a = e.apply_chat_template(msgs, "", true);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(*a, "<s><system>Be brief.</s><user>Hi</s><assistant>");
  auto b = e.apply_chat_template(msgs, R"([{"type": "function"}, {"type": "function"}])", false);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(*b, "<s>[tools:2]<system>Be brief.</s><user>Hi</s>");
  auto c = e.apply_chat_template(msgs, "null", false);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, "<s><system>Be brief.</s><user>Hi</s>");

  auto raised = e.apply_chat_template(R"([{"role": "bad", "content": ""}])", "", true);
  ASSERT_FALSE(raised.ok());
  EXPECT_EQ(raised.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(raised.status().message(), "bad role");
  EXPECT_EQ(e.apply_chat_template("[{", "", true).status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(e.apply_chat_template("{}", "", true).status().message().find("messages"),
            std::string::npos);
  EXPECT_NE(e.apply_chat_template("[]", "{}", true).status().message().find("tools"),
            std::string::npos);
  e.shutdown();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace pagoda
