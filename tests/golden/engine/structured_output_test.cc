// Constrained generation through the public Engine on the fixture model: every output of a
// constrained request is in the constraint's language (checked independently: std::regex, the
// choice list, a JSON parse plus the schema's rules written out below), whether requests run
// alone, with n > 1 samples, beside unconstrained ones, or through preemption (the runner
// rebuilds a request's matcher from its history); a constraint that cannot be compiled is refused
// at add_request with the reason.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <regex>

#include <nlohmann/json.hpp>

#include "pagoda/engine.h"
#include "test_support.h"

namespace pagoda {
namespace {

std::string model_path() {
  return pagoda::testing::fixture("models/llama-Q8_0.gguf").string();
}

class Collector {
 public:
  OutputCallback callback() {
    return [this](RequestOutput out) {
      std::lock_guard lock(mu_);
      Sample& s = samples_[{out.request_id, out.index}];
      s.text += out.text_delta;
      s.num_tokens += static_cast<int32_t>(out.new_token_ids.size());
      if (out.finished) {
        s.finished = true;
        s.reason = out.finish_reason;
        s.error = out.error;
        s.error_code = out.error_code;
        ++finished_;
        cv_.notify_all();
      }
    };
  }
  struct Sample {
    std::string text;
    int32_t num_tokens = 0;
    bool finished = false;
    FinishReason reason = FinishReason::kNone;
    std::string error;
    StatusCode error_code = StatusCode::kOk;
  };
  std::map<std::pair<std::string, int32_t>, Sample> wait(int expected) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::minutes(5), [&] { return finished_ >= expected; });
    return samples_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::pair<std::string, int32_t>, Sample> samples_;
  int finished_ = 0;
};

std::unique_ptr<Engine> make_engine(uint64_t kv_bytes = 16ull << 20, int32_t max_model_len = 512) {
  EngineConfig c;
  c.model_path = model_path();
  c.kv_cache_bytes = kv_bytes;
  c.max_model_len = max_model_len;
  c.max_num_seqs = 16;
  c.num_threads = 2;
  c.warm_up = false;
  auto e = Engine::create(c);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? std::move(e).value() : nullptr;
}

GenerateRequest request(const std::string& id, const StructuredOutputs& structured, uint64_t seed,
                        int32_t max_tokens = 200) {
  GenerateRequest r;
  r.request_id = id;
  r.prompt_tokens = {1, 450, 1234, 29889, 306};
  r.sampling.temperature = 1.0f;
  r.sampling.seed = seed;
  r.sampling.structured = structured;
  r.stop.max_tokens = max_tokens;
  return r;
}

StructuredOutputs regex(std::string pattern) {
  StructuredOutputs s;
  s.kind = StructuredOutputs::Kind::kRegex;
  s.spec = std::move(pattern);
  return s;
}

TEST(StructuredOutput, RegexAndChoiceOutputsAreInTheLanguage) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  Collector c;
  const std::string pattern = "[a-z]{3,8}( [0-9]{1,3}){0,2}";
  StructuredOutputs choice;
  choice.kind = StructuredOutputs::Kind::kChoice;
  choice.choices = {"yes", "no", "maybe not", "\xc3\xa9t\xc3\xa9"};
  int expected = 0;
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        engine->add_request(request("re" + std::to_string(i), regex(pattern), 10 + i), c.callback())
            .ok());
    ASSERT_TRUE(
        engine->add_request(request("ch" + std::to_string(i), choice, 20 + i), c.callback()).ok());
    expected += 2;
  }
  // n = 3 samples of one constrained request, and unconstrained neighbours.
  GenerateRequest multi = request("multi", regex(pattern), 99);
  multi.n = 3;
  ASSERT_TRUE(engine->add_request(multi, c.callback()).ok());
  expected += 3;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(
        engine->add_request(request("free" + std::to_string(i), {}, 30 + i, 12), c.callback())
            .ok());
    ++expected;
  }
  const auto samples = c.wait(expected);
  ASSERT_EQ(static_cast<int>(samples.size()), expected);
  const std::regex re(pattern);
  for (const auto& [key, s] : samples) {
    ASSERT_TRUE(s.finished) << key.first;
    if (key.first.starts_with("free")) continue;
    EXPECT_EQ(s.reason, FinishReason::kStop) << key.first << " '" << s.text << "'";
    if (key.first.starts_with("ch")) {
      EXPECT_NE(std::find(choice.choices.begin(), choice.choices.end(), s.text),
                choice.choices.end())
          << s.text;
    } else {
      EXPECT_TRUE(std::regex_match(s.text, re)) << key.first << " '" << s.text << "'";
    }
  }
}

TEST(StructuredOutput, JsonSchemaOutputsValidate) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  StructuredOutputs schema;
  schema.kind = StructuredOutputs::Kind::kJsonSchema;
  schema.spec = R"({"type": "object",
    "properties": {"name": {"type": "string", "maxLength": 6},
                   "age": {"type": "integer", "minimum": 0, "maximum": 120},
                   "kind": {"enum": ["cat", "dog"]},
                   "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3}},
    "required": ["name", "age", "kind"], "additionalProperties": false})";
  StructuredOutputs object;
  object.kind = StructuredOutputs::Kind::kJsonObject;
  Collector c;
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(
        engine->add_request(request("s" + std::to_string(i), schema, 40 + i, 400), c.callback())
            .ok());
  }
  const auto samples = c.wait(4);
  for (const auto& [key, s] : samples) {
    ASSERT_EQ(s.reason, FinishReason::kStop) << key.first << " '" << s.text << "'";
    auto j = nlohmann::json::parse(s.text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << s.text;
    ASSERT_TRUE(j.is_object()) << s.text;
    ASSERT_TRUE(j.contains("name") && j["name"].is_string()) << s.text;
    EXPECT_LE(j["name"].get<std::string>().size(), 6u * 4) << s.text;  // 6 code points
    ASSERT_TRUE(j.contains("age") && j["age"].is_number_integer()) << s.text;
    EXPECT_GE(j["age"].get<int>(), 0);
    EXPECT_LE(j["age"].get<int>(), 120);
    ASSERT_TRUE(j.contains("kind")) << s.text;
    EXPECT_TRUE(j["kind"] == "cat" || j["kind"] == "dog") << s.text;
    for (const auto& [k, v] : j.items()) {
      EXPECT_TRUE(k == "name" || k == "age" || k == "kind" || k == "tags") << k;
      if (k == "tags") {
        ASSERT_TRUE(v.is_array());
        EXPECT_LE(v.size(), 3u);
        for (const auto& b : v)
          EXPECT_TRUE(b.is_boolean());
      }
    }
  }
}

TEST(StructuredOutput, SurvivesPreemption) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  // A cache of a few blocks for many growing requests: the scheduler preempts and resumes them,
  // and each resumed matcher must replay its outputs.
  auto engine = make_engine(/*kv_bytes=*/1ull << 20, /*max_model_len=*/128);
  ASSERT_TRUE(engine);
  Collector c;
  const std::string pattern = "([a-z]+ ){20,40}[a-z]+";
  for (int i = 0; i < 12; ++i) {
    ASSERT_TRUE(engine
                    ->add_request(request("p" + std::to_string(i), regex(pattern), 50 + i, 110),
                                  c.callback())
                    .ok());
  }
  const auto samples = c.wait(12);
  EXPECT_GT(engine->stats().num_preemptions, 0);
  const std::regex re(pattern);
  const std::regex prefix_re("([a-z]+ ?)*");
  for (const auto& [key, s] : samples) {
    if (s.reason == FinishReason::kStop) {
      EXPECT_TRUE(std::regex_match(s.text, re)) << s.text;
    } else {
      EXPECT_EQ(s.reason, FinishReason::kLength) << key.first;
      EXPECT_TRUE(std::regex_match(s.text, prefix_re)) << s.text;
    }
  }
}

TEST(StructuredOutput, UncompilableConstraintIsRefusedAtAdd) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  const Status s = engine->add_request(request("bad", regex("a(?=b)"), 1), [](RequestOutput) {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("lookahead"), std::string::npos) << s.message();
  StructuredOutputs schema;
  schema.kind = StructuredOutputs::Kind::kJsonSchema;
  schema.spec = R"({"type": "object", "patternProperties": {"^a": {}}})";
  const Status s2 = engine->add_request(request("bad2", schema, 1), [](RequestOutput) {});
  EXPECT_EQ(s2.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s2.message().find("patternProperties"), std::string::npos) << s2.message();
}

// The grammar compiles in the background while the prompt is computed: a grammar that parses but
// that no text satisfies (found only by compiling it) ends the request with kError and
// kInvalidArgument (the request's fault), each of its samples; the same grammar text fails again
// (a failure is not cached), and the requests beside it are untouched.
TEST(StructuredOutput, GrammarFoundUnsatisfiableWhileCompilingFailsOnlyItsRequest) {
  PAGODA_REQUIRE_FIXTURE(model_path());
  auto engine = make_engine();
  ASSERT_TRUE(engine);
  Collector c;
  StructuredOutputs empty;
  empty.kind = StructuredOutputs::Kind::kGrammar;
  empty.spec = "root ::= root \"a\"\n";
  ASSERT_TRUE(engine->add_request(request("fine", regex("[0-9]{4}"), 2, 10), c.callback()).ok());
  // Refused at add_request if the compile happened to finish first (then nothing is queued),
  // else failed through its outputs: either way kInvalidArgument naming the reason.
  int expected = 1;
  std::vector<std::pair<std::string, int32_t>> failed_samples;
  for (const char* id : {"bad", "again"}) {
    GenerateRequest bad = request(id, empty, 1);
    bad.n = 2;
    const Status st = engine->add_request(bad, c.callback());
    if (!st.ok()) {
      EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(st.message().find("no text satisfies it"), std::string::npos) << st.message();
      continue;
    }
    expected += 2;
    failed_samples.emplace_back(id, 0);
    failed_samples.emplace_back(id, 1);
  }
  const auto samples = c.wait(expected);
  for (const auto& key : failed_samples) {
    const auto& s = samples.at(key);
    EXPECT_EQ(s.reason, FinishReason::kError) << key.first;
    EXPECT_EQ(s.error_code, StatusCode::kInvalidArgument) << key.first;
    EXPECT_NE(s.error.find("no text satisfies it"), std::string::npos) << s.error;
    EXPECT_EQ(s.num_tokens, 0);
  }
  const auto& fine = samples.at({"fine", 0});
  EXPECT_EQ(fine.reason, FinishReason::kStop);
  EXPECT_TRUE(std::regex_match(fine.text, std::regex("[0-9]{4}"))) << fine.text;
}

}  // namespace
}  // namespace pagoda
