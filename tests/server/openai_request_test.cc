// Request parsing and validation (server/openai_request.h), the Status -> HTTP mapping and the
// response shapes, against a FakeEngine (tokens = bytes + 3, context 256, vocab 259).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"
#include "server/fake_engine.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/router.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

class RequestTest : public ::testing::Test {
 protected:
  std::optional<ApiError> chat(const json& body, GenerationSpec& spec) {
    return parse_generation_request(body.dump(), Endpoint::kChat, engine_, cfg_, spec);
  }
  std::optional<ApiError> completion(const json& body, GenerationSpec& spec) {
    return parse_generation_request(body.dump(), Endpoint::kCompletion, engine_, cfg_, spec);
  }
  // The param of the 400 that `body` gets, or "<ok>".
  std::string rejected_param(const json& body, Endpoint e = Endpoint::kChat) {
    GenerationSpec spec;
    auto err = parse_generation_request(body.dump(), e, engine_, cfg_, spec);
    if (!err) return "<ok>";
    EXPECT_EQ(err->status, 400) << err->message;
    return err->param;
  }
  json base() { return json{{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}}; }

  pagoda::testing::FakeEngine engine_;
  ServerConfig cfg_;
};

TEST_F(RequestTest, ChatDefaultsAndPrompt) {
  GenerationSpec spec;
  ASSERT_FALSE(chat(base(), spec));
  ASSERT_EQ(spec.prompts.size(), 1u);
  // The fake template is the normalised messages JSON + "\nassistant:"; chat adds no BOS.
  const std::string expected_text =
      json::array({{{"role", "user"}, {"content", "hi"}}}).dump() + "\nassistant:";
  EXPECT_EQ(spec.prompts[0].text, expected_text);
  EXPECT_EQ(spec.prompts[0].tokens.size(), expected_text.size());
  EXPECT_EQ(spec.prompts[0].tokens[0], static_cast<int32_t>('[') + 3);
  // No max_tokens: the rest of the context.
  EXPECT_EQ(spec.stop.max_tokens, 256 - static_cast<int32_t>(expected_text.size()));
  EXPECT_EQ(spec.n, 1);
  EXPECT_FALSE(spec.stream);
  EXPECT_EQ(spec.sampling.logprobs, -1);
}

TEST_F(RequestTest, ContentPartsAreJoined) {
  json body = base();
  body["messages"][0]["content"] =
      json::array({{{"type", "text"}, {"text", "a"}}, {{"type", "text"}, {"text", "b"}}});
  GenerationSpec spec;
  ASSERT_FALSE(chat(body, spec));
  EXPECT_NE(spec.prompts[0].text.find("\"a\\nb\""), std::string::npos) << spec.prompts[0].text;
  body["messages"][0]["content"] = json::array({{{"type", "image_url"}, {"image_url", "x"}}});
  EXPECT_EQ(rejected_param(body), "messages[0].content");
}

TEST_F(RequestTest, CompletionPromptShapes) {
  GenerationSpec spec;
  ASSERT_FALSE(completion({{"prompt", "ab"}}, spec));
  ASSERT_EQ(spec.prompts.size(), 1u);
  EXPECT_EQ(spec.prompts[0].tokens, (std::vector<int32_t>{1, 'a' + 3, 'b' + 3}));  // BOS added
  EXPECT_EQ(spec.stop.max_tokens, 16);  // OpenAI's completions default

  ASSERT_FALSE(completion({{"prompt", {5, 6, 7}}}, spec));
  EXPECT_EQ(spec.prompts[0].tokens, (std::vector<int32_t>{5, 6, 7}));

  ASSERT_FALSE(completion({{"prompt", {"x", "yz"}}, {"n", 2}}, spec));
  EXPECT_EQ(spec.prompts.size(), 2u);
  EXPECT_EQ(spec.n, 2);

  ASSERT_FALSE(completion({{"prompt", {{5, 6}, {7}}}}, spec));
  EXPECT_EQ(spec.prompts[1].tokens, (std::vector<int32_t>{7}));

  ASSERT_FALSE(completion({{"prompt", "ab"}, {"add_special_tokens", false}}, spec));
  EXPECT_EQ(spec.prompts[0].tokens.size(), 2u);
}

// echo + logprobs = k asks the engine for the prompt's logprobs with top k; prompt_logprobs = m
// (vLLM) with top m; both: one prompt pass with the larger count.
TEST_F(RequestTest, EchoAndPromptLogprobsReachTheEngine) {
  GenerationSpec spec;
  ASSERT_FALSE(completion({{"prompt", "ab"}}, spec));
  EXPECT_EQ(spec.sampling.prompt_logprobs, -1);
  ASSERT_FALSE(completion({{"prompt", "ab"}, {"echo", true}}, spec));
  EXPECT_EQ(spec.sampling.prompt_logprobs, -1);
  ASSERT_FALSE(completion({{"prompt", "ab"}, {"echo", true}, {"logprobs", 3}}, spec));
  EXPECT_EQ(spec.sampling.prompt_logprobs, 3);
  EXPECT_EQ(spec.sampling.logprobs, 3);
  ASSERT_FALSE(completion({{"prompt", "ab"}, {"logprobs", 3}}, spec));
  EXPECT_EQ(spec.sampling.prompt_logprobs, -1);
  ASSERT_FALSE(completion({{"prompt", "ab"}, {"prompt_logprobs", 5}}, spec));
  EXPECT_EQ(spec.sampling.prompt_logprobs, 5);
  EXPECT_EQ(spec.prompt_logprobs, 5);
  EXPECT_EQ(spec.sampling.logprobs, -1);
  ASSERT_FALSE(completion(
      {{"prompt", "ab"}, {"echo", true}, {"logprobs", 7}, {"prompt_logprobs", 2}}, spec));
  EXPECT_EQ(spec.sampling.prompt_logprobs, 7);
  ASSERT_FALSE(completion({{"prompt", "ab"}, {"prompt_logprobs", nullptr}}, spec));
  EXPECT_EQ(spec.sampling.prompt_logprobs, -1);
  for (const json& bad : {json(-1), json(21), json("1"), json(1.5), json(true)}) {
    EXPECT_EQ(rejected_param({{"prompt", "a"}, {"prompt_logprobs", bad}}, Endpoint::kCompletion),
              "prompt_logprobs")
        << bad.dump();
  }
}

TEST_F(RequestTest, SamplingFieldsReachTheEngine) {
  json body = base();
  body.update({{"temperature", 0.5},
               {"top_p", 0.9},
               {"top_k", 40},
               {"min_p", 0.05},
               {"presence_penalty", 0.1},
               {"frequency_penalty", -0.2},
               {"repetition_penalty", 1.1},
               {"seed", 7},
               {"logit_bias", {{"10", 5}, {"11", -100}}},
               {"stop", {"x", "yy"}},
               {"stop_token_ids", {4, 5}},
               {"max_completion_tokens", 9},
               {"max_tokens", 3},
               {"ignore_eos", true},
               {"logprobs", true},
               {"top_logprobs", 4},
               {"n", 3},
               {"stream", true},
               {"stream_options", {{"include_usage", true}}},
               {"priority", -2},
               {"user", "ignored"}});
  GenerationSpec spec;
  ASSERT_FALSE(chat(body, spec));
  EXPECT_FLOAT_EQ(spec.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(spec.sampling.top_p, 0.9f);
  EXPECT_EQ(spec.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(spec.sampling.min_p, 0.05f);
  EXPECT_FLOAT_EQ(spec.sampling.presence_penalty, 0.1f);
  EXPECT_FLOAT_EQ(spec.sampling.frequency_penalty, -0.2f);
  EXPECT_FLOAT_EQ(spec.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(spec.sampling.seed, 7u);
  ASSERT_EQ(spec.sampling.logit_bias.size(), 2u);
  EXPECT_EQ(spec.stop.stop_strings, (std::vector<std::string>{"x", "yy"}));
  EXPECT_EQ(spec.stop.stop_token_ids, (std::vector<int32_t>{4, 5}));
  EXPECT_EQ(spec.stop.max_tokens, 9);  // max_completion_tokens wins over max_tokens
  EXPECT_TRUE(spec.stop.ignore_eos);
  EXPECT_EQ(spec.sampling.logprobs, 4);
  EXPECT_EQ(spec.n, 3);
  EXPECT_TRUE(spec.stream);
  EXPECT_TRUE(spec.include_usage);
  EXPECT_EQ(spec.priority, -2);

  GenerationSpec s2;
  ASSERT_FALSE(completion({{"prompt", "a"}, {"logprobs", 0}}, s2));
  EXPECT_EQ(s2.sampling.logprobs, 0);
  ASSERT_FALSE(completion({{"prompt", "a"}, {"seed", -1}}, s2));
  EXPECT_EQ(s2.sampling.seed, UINT64_MAX);
  ASSERT_FALSE(completion({{"prompt", "a"}, {"temperature", nullptr}, {"n", 2.0}}, s2));
  EXPECT_EQ(s2.n, 2);
}

TEST_F(RequestTest, InvalidFieldsNameTheParam) {
  const auto with = [&](const char* key, json value) {
    json b = base();
    b[key] = std::move(value);
    return rejected_param(b);
  };
  EXPECT_EQ(with("temperature", -0.1), "temperature");
  EXPECT_EQ(with("temperature", "hot"), "temperature");
  EXPECT_EQ(with("temperature", 1e300), "temperature");
  EXPECT_EQ(with("top_p", 0), "top_p");
  EXPECT_EQ(with("top_p", 1.5), "top_p");
  EXPECT_EQ(with("top_k", -2), "top_k");
  EXPECT_EQ(with("min_p", 2), "min_p");
  EXPECT_EQ(with("presence_penalty", 3), "presence_penalty");
  EXPECT_EQ(with("frequency_penalty", true), "frequency_penalty");
  EXPECT_EQ(with("repetition_penalty", 0), "repetition_penalty");
  EXPECT_EQ(with("n", 0), "n");
  EXPECT_EQ(with("n", 17), "n");
  EXPECT_EQ(with("n", 1.5), "n");
  EXPECT_EQ(with("n", "2"), "n");
  EXPECT_EQ(with("max_tokens", 0), "max_tokens");
  EXPECT_EQ(with("max_tokens", 1000000), "max_tokens");
  EXPECT_EQ(with("max_tokens", 1e30), "max_tokens");
  EXPECT_EQ(with("max_completion_tokens", -5), "max_completion_tokens");
  EXPECT_EQ(with("logprobs", 1), "logprobs");
  EXPECT_EQ(with("seed", 1.5), "seed");
  EXPECT_EQ(with("stop", 5), "stop");
  EXPECT_EQ(with("stop", json::array({""})), "stop");
  EXPECT_EQ(with("stop", json::array({1})), "stop");
  EXPECT_EQ(with("stop", std::string(2000, 'x')), "stop");
  EXPECT_EQ(with("stop", json(std::vector<std::string>(10000, "x"))), "stop");
  EXPECT_EQ(with("stop_token_ids", json::array({259})), "stop_token_ids");
  EXPECT_EQ(with("logit_bias", json::array()), "logit_bias");
  EXPECT_EQ(with("logit_bias", {{"abc", 1}}), "logit_bias");
  EXPECT_EQ(with("logit_bias", {{"-1", 1}}), "logit_bias");
  EXPECT_EQ(with("logit_bias", {{"5", 101}}), "logit_bias");
  EXPECT_EQ(with("stream", "yes"), "stream");
  EXPECT_EQ(with("stream_options", 1), "stream_options");
  EXPECT_EQ(with("messages", json::array()), "messages");
  EXPECT_EQ(with("messages", "hi"), "messages");
  EXPECT_EQ(with("messages", json::array({{{"content", "x"}}})), "messages[0].role");
  EXPECT_EQ(with("messages", json::array({5})), "messages[0]");
  EXPECT_EQ(with("response_format", {{"type", "json_object"}}), "<ok>");
  EXPECT_EQ(with("response_format", {{"type", "xml"}}), "response_format.type");
  EXPECT_EQ(with("response_format", {{"type", "text"}, {"x", 1}}), "response_format.x");
  EXPECT_EQ(with("response_format", {{"type", "json_schema"}}), "response_format.json_schema");
  EXPECT_EQ(with("response_format",
                 {{"type", "json_schema"}, {"json_schema", {{"name", "a"}, {"schema", 5}}}}),
            "response_format.json_schema.schema");
  EXPECT_EQ(with("guided_regex", ""), "guided_regex");
  EXPECT_EQ(with("guided_choice", json::array()), "guided_choice");
  EXPECT_EQ(with("guided_choice", json::array({1})), "guided_choice");
  EXPECT_EQ(with("structured_outputs", {{"regex", "a"}, {"choice", {"b"}}}), "structured_outputs");
  EXPECT_EQ(with("structured_outputs", {{"jsn", 1}}), "structured_outputs.jsn");
  EXPECT_EQ(with("grammar", 5), "grammar");
  EXPECT_EQ(with("guided_decoding_backend", "xgrammar"), "guided_decoding_backend");
  EXPECT_EQ(with("tool_choice", "required"), "tool_choice");  // no tools
  EXPECT_EQ(with("tool_choice", "none"), "<ok>");
  EXPECT_EQ(with("parallel_tool_calls", 1), "parallel_tool_calls");
  EXPECT_EQ(with("tools", {{"type", "function"}}), "tools");
  {
    json b = base();
    b["tools"] = json::array({{{"type", "function"}}});
    EXPECT_EQ(rejected_param(b), "tools[0].function");
    b["tools"] = json::array({{{"type", "function"}, {"function", {{"name", "a b"}}}}});
    EXPECT_EQ(rejected_param(b), "tools[0].function.name");
    b["tools"] = json::array({{{"type", "function"}, {"function", {{"name", "f"}, {"x", 1}}}}});
    EXPECT_EQ(rejected_param(b), "tools[0].function.x");
    b["tools"] = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}},
                              {{"type", "function"}, {"function", {{"name", "f"}}}}});
    EXPECT_EQ(rejected_param(b), "tools[1].function.name");
    b["tools"] = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
    b["tool_choice"] = "sometimes";
    EXPECT_EQ(rejected_param(b), "tool_choice");
    b["tool_choice"] = {{"type", "function"}, {"function", {{"name", "g"}}}};
    EXPECT_EQ(rejected_param(b), "tool_choice.function.name");
    b["tool_choice"] = {{"type", "function"}, {"function", {{"name", "f"}}}};
    EXPECT_EQ(rejected_param(b), "<ok>");
    b["tool_choice"] = "required";
    b["guided_regex"] = "a";
    EXPECT_EQ(rejected_param(b), "tool_choice");
  }
  {
    json b = base();
    b["guided_regex"] = "a";
    b["response_format"] = {{"type", "json_object"}};
    EXPECT_EQ(rejected_param(b), "guided_regex");
    b["messages"] = json::array(
        {{{"role", "assistant"},
          {"tool_calls", json::array({{{"id", "c"},
                                       {"type", "function"},
                                       {"function", {{"name", "f"}, {"arguments", "{bad"}}}}})}}});
    b.erase("guided_regex");
    EXPECT_EQ(rejected_param(b), "messages[0].tool_calls[0].function.arguments");
  }
  {
    json b = base();
    b["top_logprobs"] = 2;  // without logprobs: true
    EXPECT_EQ(rejected_param(b), "top_logprobs");
    b["logprobs"] = true;
    b["top_logprobs"] = 21;
    EXPECT_EQ(rejected_param(b), "top_logprobs");
  }
  EXPECT_EQ(rejected_param({{"prompt", ""}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", json::array()}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", {1, 259}}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", {1, -1}}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", {"a", 5}}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", json::array({json::array()})}}, Endpoint::kCompletion),
            "prompt");
  EXPECT_EQ(rejected_param({{"prompt", std::string(300, 'a')}}, Endpoint::kCompletion), "prompt");
  EXPECT_EQ(rejected_param({{"prompt", "a"}, {"logprobs", 21}}, Endpoint::kCompletion), "logprobs");
  EXPECT_EQ(rejected_param({{"prompt", "a"}, {"logprobs", true}}, Endpoint::kCompletion),
            "logprobs");
  EXPECT_EQ(rejected_param({{"prompt", "a"}, {"suffix", "z"}}, Endpoint::kCompletion), "suffix");
  EXPECT_EQ(rejected_param(json::object(), Endpoint::kCompletion), "prompt");
}

TEST_F(RequestTest, UnsupportedFieldsAreRefusedByName) {
  json b = base();
  b["prompt"] = "a completion field on the chat endpoint";
  EXPECT_EQ(rejected_param(b), "prompt");
  b = base();
  b["functions"] = json::array();  // OpenAI's deprecated form of tools
  EXPECT_EQ(rejected_param(b), "functions");
  EXPECT_EQ(
      rejected_param({{"prompt", "ab"}, {"parallel_tool_calls", false}}, Endpoint::kCompletion),
      "parallel_tool_calls");
  EXPECT_EQ(rejected_param({{"prompt", "ab"}, {"messages", json::array()}}, Endpoint::kCompletion),
            "messages");
  EXPECT_EQ(
      rejected_param({{"prompt", "ab"}, {"echo", true}, {"user", "u1"}}, Endpoint::kCompletion),
      "<ok>");
}

// Issue 40, item 7: every field of the OpenAI, vLLM or llama.cpp request schemas that pagoda
// does not implement is a 400 naming it (never silently ignored); issue 39: so is a field outside
// all of them.
TEST_F(RequestTest, SchemaFieldsWeLackAndUnknownFieldsAreRefused) {
  for (const char* field : {"functions",
                            "function_call",
                            "audio",
                            "modalities",
                            "prediction",
                            "store",
                            "metadata",
                            "service_tier",
                            "web_search_options",
                            "reasoning_effort",
                            "allowed_token_ids",
                            "bad_words",
                            "guided_decoding_backend",
                            "guided_whitespace_pattern",
                            "logits_processors",
                            "chat_template",
                            "chat_template_kwargs",
                            "continue_final_message",
                            "n_predict",
                            "n_probs",
                            "typical_p",
                            "tfs_z",
                            "mirostat",
                            "repeat_penalty",
                            "repeat_last_n",
                            "dry_multiplier",
                            "xtc_probability",
                            "cache_prompt",
                            "samplers",
                            "id_slot",
                            "n_keep",
                            "top_n_sigma"}) {
    json b = base();
    b[field] = 1;
    EXPECT_EQ(rejected_param(b), field) << field;
    json c = {{"prompt", "ab"}};
    c[field] = 1;
    EXPECT_EQ(rejected_param(c, Endpoint::kCompletion), field) << field;
  }
  // The other endpoint's fields: tools on /v1/completions, prompt/echo/suffix on chat.
  for (const char* field : {"tools", "tool_choice", "messages", "top_logprobs",
                            "max_completion_tokens", "add_generation_prompt"}) {
    json c = {{"prompt", "ab"}};
    c[field] = json::array({1});
    EXPECT_EQ(rejected_param(c, Endpoint::kCompletion), field) << field;
  }
  for (const char* field : {"prompt", "echo", "suffix", "prompt_logprobs"}) {
    json b = base();
    b[field] = "x";
    EXPECT_EQ(rejected_param(b), field) << field;
  }
  // null is absent.
  json nulls = base();
  nulls["functions"] = nullptr;
  nulls["prompt"] = nullptr;
  EXPECT_EQ(rejected_param(nulls), "<ok>");
  // Outside every schema: refused by name on both endpoints (names cut to 64 bytes), with code
  // unknown_field; null is absent there too.
  for (const Endpoint e : {Endpoint::kChat, Endpoint::kCompletion}) {
    json b = e == Endpoint::kChat ? base() : json{{"prompt", "ab"}};
    for (const char* field : {"unknown_field", "max_token", "temprature", "x_trace_id"}) {
      json c = b;
      c[field] = json::array({1, 2, 3});
      GenerationSpec spec;
      auto err = parse_generation_request(c.dump(), e, engine_, cfg_, spec);
      ASSERT_TRUE(err) << field;
      EXPECT_EQ(err->status, 400);
      EXPECT_EQ(err->param, field);
      EXPECT_EQ(err->code, "unknown_field");
      EXPECT_NE(err->message.find(field), std::string::npos) << err->message;
      c[field] = nullptr;
      EXPECT_EQ(rejected_param(c, e), "<ok>") << field;
    }
    json c = b;
    c[std::string(1000, 'k')] = 1;
    EXPECT_EQ(rejected_param(c, e), std::string(64, 'k'));
  }
}

// The accepted fields, as listed in docs/design/server.md ("Request fields"): each one, with a
// valid value, is accepted alone on its endpoint (the companion field a value needs, if any, is
// added). The list is the documentation's, not the code's, so a field dropped from the code (or
// refused by a stricter check) fails here.
TEST_F(RequestTest, EveryDocumentedFieldIsAccepted) {
  const std::string grammar = "root ::= \"a\"";
  const std::vector<std::pair<const char*, json>> common = {
      {"model", engine_.model_info().id},
      {"stream", false},
      {"stream_options", {{"include_usage", true}}},
      {"temperature", 0.5},
      {"top_p", 0.9},
      {"top_k", 5},
      {"min_p", 0.1},
      {"n", 2},
      {"max_tokens", 4},
      {"stop", json::array({"x"})},
      {"stop_token_ids", json::array({5})},
      {"seed", 1},
      {"presence_penalty", 0.5},
      {"frequency_penalty", 0.5},
      {"repetition_penalty", 1.1},
      {"logit_bias", {{"5", 1.0}}},
      {"ignore_eos", true},
      {"min_tokens", 1},
      {"include_stop_str_in_output", true},
      {"skip_special_tokens", false},
      {"priority", 1},
      {"cache_salt", "tenant-a"},
      {"response_format", {{"type", "json_object"}}},
      {"guided_json", {{"type", "object"}}},
      {"guided_regex", "a+"},
      {"guided_grammar", grammar},
      {"guided_choice", json::array({"a", "b"})},
      {"structured_outputs", {{"choice", json::array({"a", "b"})}}},
      {"grammar", grammar},
      {"json_schema", {{"type", "object"}}},
      {"best_of", 1},
      {"use_beam_search", false},
      {"user", "user-1"},
      {"add_special_tokens", false}};
  const json tool = {{"type", "function"},
                     {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}};
  const std::vector<std::pair<const char*, json>> chat_only = {{"logprobs", true},
                                                               {"top_logprobs", 2},
                                                               {"max_completion_tokens", 4},
                                                               {"tools", json::array({tool})},
                                                               {"tool_choice", "none"},
                                                               {"add_generation_prompt", true},
                                                               {"parallel_tool_calls", false}};
  const std::vector<std::pair<const char*, json>> completion_only = {
      {"logprobs", 2}, {"echo", true}, {"suffix", ""}, {"prompt_logprobs", 1}};
  const auto check = [&](Endpoint e, const json& base_body, const char* field, const json& value) {
    json b = base_body;
    b[field] = value;
    if (std::string_view(field) == "top_logprobs") b["logprobs"] = true;
    if (std::string_view(field) == "stream_options") b["stream"] = true;
    GenerationSpec spec;
    auto err = parse_generation_request(b.dump(), e, engine_, cfg_, spec);
    EXPECT_FALSE(err) << field << ": " << (err ? err->message : "");
  };
  // "messages" and "prompt" are in every base body.
  for (const auto& [field, value] : common) {
    check(Endpoint::kChat, base(), field, value);
    check(Endpoint::kCompletion, json{{"prompt", "ab"}}, field, value);
  }
  for (const auto& [field, value] : chat_only)
    check(Endpoint::kChat, base(), field, value);
  for (const auto& [field, value] : completion_only)
    check(Endpoint::kCompletion, json{{"prompt", "ab"}}, field, value);
}

TEST_F(RequestTest, ConstraintsAndToolsReachTheEngine) {
  using Kind = StructuredOutputs::Kind;
  GenerationSpec spec;
  json b = base();
  b["response_format"] = {{"type", "json_schema"},
                          {"json_schema", {{"name", "p"}, {"schema", {{"type", "integer"}}}}}};
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kJsonSchema);
  EXPECT_EQ(json::parse(spec.sampling.structured.spec), json({{"type", "integer"}}));
  EXPECT_EQ(spec.tool_format, ToolCallFormat::kNone);

  b = base();
  b["structured_outputs"] = {{"choice", {"a", "b"}}};
  ASSERT_FALSE(completion({{"prompt", "x"}, {"guided_choice", {"a", "b"}}}, spec));
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kChoice);
  EXPECT_EQ(spec.sampling.structured.choices, (std::vector<std::string>{"a", "b"}));
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kChoice);

  // The fake engine's chat template teaches no tool format: auto parses nothing, required
  // constrains (and parses) in the hermes format.
  b = base();
  b["tools"] = json::array({{{"type", "function"},
                             {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}}});
  ASSERT_FALSE(chat(b, spec));
  EXPECT_TRUE(spec.sampling.structured.empty());
  EXPECT_EQ(spec.tool_format, ToolCallFormat::kNone);
  b["tool_choice"] = "required";
  b["parallel_tool_calls"] = false;
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kToolCalls);
  EXPECT_EQ(spec.tool_format, ToolCallFormat::kHermes);
  const json tool_spec = json::parse(spec.sampling.structured.spec);
  EXPECT_EQ(tool_spec["format"], "hermes");
  EXPECT_EQ(tool_spec["mode"], "required");
  EXPECT_EQ(tool_spec["parallel"], false);
  EXPECT_EQ(tool_spec["tools"], b["tools"]);
  b["tool_choice"] = {{"type", "function"}, {"function", {{"name", "f"}}}};
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(json::parse(spec.sampling.structured.spec)["name"], "f");
  b["tool_choice"] = "none";
  ASSERT_FALSE(chat(b, spec));
  EXPECT_TRUE(spec.sampling.structured.empty());
  EXPECT_EQ(spec.tool_format, ToolCallFormat::kNone);

  // --tool-call-parser: auto requests parse in that format; Llama 3 / Mistral keep special
  // tokens' text for the parser.
  cfg_.tool_call_format = ToolCallFormat::kLlama3Json;
  cfg_.reasoning_format = ReasoningFormat::kQwen3;
  b["tool_choice"] = "auto";
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.tool_format, ToolCallFormat::kLlama3Json);
  EXPECT_EQ(spec.reasoning, ReasoningFormat::kQwen3);
  EXPECT_FALSE(spec.skip_special_tokens);
  // llama3_json: a call the model opens with {"name" is constrained.
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kToolCalls);
  EXPECT_EQ(spec.sampling.structured.trigger, "{\"name\"");
  EXPECT_TRUE(spec.sampling.structured.repeat_trigger);
  EXPECT_EQ(json::parse(spec.sampling.structured.spec)["format"], "llama3_json");
  cfg_.tool_call_format = ToolCallFormat::kMistral;
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.sampling.structured.trigger, "[TOOL_CALLS]");
  EXPECT_EQ(json::parse(spec.sampling.structured.spec)["format"], "mistral");
  // Hermes: tool_choice auto constrains each call the model opens with <tool_call>.
  cfg_.tool_call_format = ToolCallFormat::kHermes;
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kToolCalls);
  EXPECT_EQ(spec.sampling.structured.trigger, "<tool_call>");
  EXPECT_TRUE(spec.sampling.structured.repeat_trigger);
  EXPECT_EQ(json::parse(spec.sampling.structured.spec)["mode"], "auto");
  b["response_format"] = {{"type", "json_object"}};  // an explicit format wins over auto
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kJsonObject);
  // With a reasoning parser a constraint waits for the end of the reasoning.
  b = base();
  b["response_format"] = {{"type", "json_object"}};
  ASSERT_FALSE(chat(b, spec));
  EXPECT_EQ(spec.sampling.structured.kind, Kind::kJsonObject);
  EXPECT_EQ(spec.sampling.structured.trigger, "</think>");
  EXPECT_FALSE(spec.sampling.structured.repeat_trigger);
}

TEST_F(RequestTest, ContextOverflowNamesMaxTokens) {
  // 250 prompt tokens (with BOS) in a 256 context: max_tokens 6 fits, 7 does not.
  const std::string prompt(249, 'a');
  GenerationSpec spec;
  ASSERT_FALSE(completion({{"prompt", prompt}, {"max_tokens", 6}}, spec));
  EXPECT_EQ(rejected_param({{"prompt", prompt}, {"max_tokens", 7}}, Endpoint::kCompletion),
            "max_tokens");
  // Without max_tokens the default is clipped to the room left.
  ASSERT_FALSE(completion({{"prompt", prompt}}, spec));
  EXPECT_EQ(spec.stop.max_tokens, 6);
}

TEST_F(RequestTest, UnknownModelIs404) {
  GenerationSpec spec;
  json b = base();
  b["model"] = "other";
  auto err = chat(b, spec);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 404);
  EXPECT_EQ(err->param, "model");
  b["model"] = "fake-model";
  EXPECT_FALSE(chat(b, spec));
}

TEST_F(RequestTest, MalformedBodies) {
  for (const std::string& body : std::vector<std::string>{
           "", "{", "{\"messages\": [", "[1,2]", "null", "\"x\"", "{\"temperature\": NaN}",
           "{\"a\":1,}", std::string(100, '[') + std::string(100, ']')}) {
    GenerationSpec spec;
    auto err = parse_generation_request(body, Endpoint::kChat, engine_, cfg_, spec);
    ASSERT_TRUE(err) << body;
    EXPECT_EQ(err->status, 400) << body;
    EXPECT_TRUE(err->param.empty()) << body;
  }
}

TEST(JsonDepth, CountsBracketsOutsideStrings) {
  EXPECT_EQ(json_nesting_depth("{}", 10), 1);
  EXPECT_EQ(json_nesting_depth("{\"a\":[[1],{\"b\":2}]}", 10), 3);
  EXPECT_EQ(json_nesting_depth("{\"a\":\"[[[[\\\"[[\"}", 10), 1);
  EXPECT_EQ(json_nesting_depth("1", 10), 0);
  EXPECT_GT(json_nesting_depth(std::string(1000000, '['), 64), 64);
}

TEST(ConstantTimeEqual, ComparesWholeStrings) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abd", "abc"));
  EXPECT_FALSE(constant_time_equal("ab", "abc"));
  EXPECT_FALSE(constant_time_equal("abcd", "abc"));
  EXPECT_FALSE(constant_time_equal("", "abc"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(ApiErrorMapping, StatusCodesToHttp) {
  const auto status_of = [](StatusCode c) { return from_status(Status(c, "m")).status; };
  EXPECT_EQ(status_of(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(status_of(StatusCode::kOutOfRange), 400);
  EXPECT_EQ(status_of(StatusCode::kUnimplemented), 400);
  EXPECT_EQ(status_of(StatusCode::kNotFound), 404);
  EXPECT_EQ(status_of(StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(status_of(StatusCode::kDeadlineExceeded), 429);
  EXPECT_EQ(status_of(StatusCode::kFailedPrecondition), 503);
  EXPECT_EQ(status_of(StatusCode::kUnavailable), 503);
  EXPECT_EQ(status_of(StatusCode::kInternal), 500);
  EXPECT_EQ(status_of(StatusCode::kIo), 500);
  EXPECT_GT(from_status(resource_exhausted("full")).retry_after_seconds, 0);

  const json body = json::parse(from_status(invalid_argument("bad"), "temperature").body());
  EXPECT_EQ(body["error"]["message"], "bad");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "temperature");
  const json none = json::parse(unauthorized().body());
  EXPECT_TRUE(none["error"]["param"].is_null());
}

// Issue 40: "code" is one type, as OpenAI's: a string, or null when there is no specific code
// (it was the HTTP status, a number, for these).
TEST(ErrorMapping, CodeIsAStringOrNullNeverANumber) {
  const json body = json::parse(from_status(invalid_argument("bad"), "temperature").body());
  EXPECT_TRUE(body["error"]["code"].is_null()) << body.dump();
  for (const ApiError& e :
       {bad_request("x"), unauthorized(), route_not_found("GET", "/x"),
        method_not_allowed("GET", "/x"), payload_too_large(1), uri_too_long(1),
        headers_too_large(1), unavailable("x", 1), too_many_requests("x", "queue_full", 1),
        internal("x"), from_status(unimplemented("x")), from_status(not_found("x"))}) {
    const json j = json::parse(e.body());
    EXPECT_TRUE(j["error"]["code"].is_string() || j["error"]["code"].is_null()) << j.dump();
  }
}

// Issue 40, item 6: chat logprobs' "bytes" are the token's raw bytes (meta.token_bytes), also in
// the streamed chunks, even when the token ends inside a UTF-8 character and its text shows
// U+FFFD.
TEST(ResponseShapes, ChatLogprobBytesAreTheRawTokenBytes) {
  ResponseMeta meta;
  meta.endpoint = Endpoint::kChat;
  meta.id = "chatcmpl-x";
  meta.logprobs = true;
  meta.token_bytes = [](int32_t id) { return id == 231 ? std::string("\xE4") : std::string("a"); };
  const TokenText text = [](int32_t id) {
    return id == 231 ? std::string("\xEF\xBF\xBD") : std::string("a");
  };
  ChoiceResult c;
  c.text = "\xEF\xBF\xBD";
  c.finish_reason = FinishReason::kLength;
  TokenLogprobs lp;
  lp.token = 231;
  lp.logprob = -0.5f;
  lp.top = {{231, -0.5f}, {68, -1.0f}};
  c.logprobs = {lp};
  const json j = json::parse(full_response_json(meta, {c}, UsageTotals{1, 1, 0}, text));
  const json& entry = j["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["token"], "\xEF\xBF\xBD");
  EXPECT_EQ(entry["bytes"], json::array({0xE4}));
  EXPECT_EQ(entry["top_logprobs"][0]["bytes"], json::array({0xE4}));
  EXPECT_EQ(entry["top_logprobs"][1]["bytes"], json::array({'a'}));
  ChunkParts p;
  p.logprobs = &c.logprobs;
  const json chunk = json::parse(chunk_json(meta, p, text));
  EXPECT_EQ(chunk["choices"][0]["logprobs"]["content"][0]["bytes"], json::array({0xE4}));
}

TEST(ResponseShapes, ChatAndCompletionObjects) {
  ResponseMeta meta;
  meta.endpoint = Endpoint::kChat;
  meta.id = make_response_id("chatcmpl-");
  meta.created = 42;
  meta.model = "m";
  meta.logprobs = true;
  ChoiceResult c;
  c.text = "hé";
  c.finish_reason = FinishReason::kStop;
  c.stop_reason = "!";
  TokenLogprobs lp;
  lp.token = 7;
  lp.logprob = -std::numeric_limits<float>::infinity();
  lp.top = {{7, -0.25f}};
  c.logprobs = {lp};
  UsageTotals u{5, 1, 2};
  const TokenText text = [](int32_t id) { return "t" + std::to_string(id); };
  const json j = json::parse(full_response_json(meta, {c}, u, text));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  EXPECT_EQ(j["id"].get<std::string>().size(), 9u + 32u);
  EXPECT_EQ(j["choices"][0]["message"]["content"], "hé");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(j["choices"][0]["stop_reason"], "!");
  const json& entry = j["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(entry["token"], "t7");
  EXPECT_EQ(entry["logprob"], -9999.0);  // -inf is not JSON
  EXPECT_EQ(entry["bytes"], json::array({'t', '7'}));
  EXPECT_EQ(entry["top_logprobs"][0]["logprob"], -0.25);
  EXPECT_EQ(j["usage"]["total_tokens"], 6);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 2);

  meta.endpoint = Endpoint::kCompletion;
  ChunkParts p;
  p.index = 1;
  p.text = "ab";
  p.logprobs = &c.logprobs;
  p.text_offset = 10;
  p.usage_null = true;
  const json chunk = json::parse(chunk_json(meta, p, text));
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["index"], 1);
  EXPECT_EQ(chunk["choices"][0]["text"], "ab");
  EXPECT_TRUE(chunk["choices"][0]["finish_reason"].is_null());
  EXPECT_EQ(chunk["choices"][0]["logprobs"]["text_offset"], json::array({10}));
  EXPECT_EQ(chunk["choices"][0]["logprobs"]["top_logprobs"][0]["t7"], -0.25);
  EXPECT_TRUE(chunk.contains("usage") && chunk["usage"].is_null());
  EXPECT_EQ(sse_event("{}"), "data: {}\n\n");
}

TEST(ResponseShapes, ToolCallsAndReasoning) {
  ResponseMeta meta;
  meta.endpoint = Endpoint::kChat;
  meta.id = "chatcmpl-x";
  ChoiceResult c;
  c.finish_reason = FinishReason::kStop;
  c.reasoning = "hmm";
  c.tool_calls = {{"call_1", "f", R"({"a":1})"}};
  const TokenText text = [](int32_t id) { return std::to_string(id); };
  const json j = json::parse(full_response_json(meta, {c}, UsageTotals{}, text));
  const json& m = j["choices"][0]["message"];
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_EQ(m["reasoning_content"], "hmm");
  EXPECT_EQ(m["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(m["tool_calls"][0]["type"], "function");
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], R"({"a":1})");
  c.finish_reason = FinishReason::kLength;  // cut off: stays "length"
  EXPECT_EQ(json::parse(
                full_response_json(meta, {c}, UsageTotals{}, text))["choices"][0]["finish_reason"],
            "length");

  std::vector<ToolCallDelta> deltas = {{0, "call_1", "f", "{\"a\""}, {1, "", "", "1}"}};
  ChunkParts p;
  p.reasoning = "r";
  p.tool_calls = &deltas;
  p.made_tool_calls = true;
  p.finish_reason = FinishReason::kStop;
  const json chunk = json::parse(chunk_json(meta, p, text));
  const json& d = chunk["choices"][0]["delta"];
  EXPECT_FALSE(d.contains("content"));
  EXPECT_EQ(d["reasoning_content"], "r");
  EXPECT_EQ(d["tool_calls"][0], json({{"index", 0},
                                      {"id", "call_1"},
                                      {"type", "function"},
                                      {"function", {{"name", "f"}, {"arguments", "{\"a\""}}}}));
  EXPECT_EQ(d["tool_calls"][1], json({{"index", 1}, {"function", {{"arguments", "1}"}}}}));
  EXPECT_EQ(chunk["choices"][0]["finish_reason"], "tool_calls");
}

}  // namespace
}  // namespace pagoda::server
