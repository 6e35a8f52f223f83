// The Anthropic Messages and OpenAI Responses surfaces (server/anthropic_messages.h,
// server/openai_responses.h, server/response_store.h) against a FakeEngine (tokens = bytes + 3,
// context 4096): each request must mean exactly the chat-completions request it translates to
// (the same prompt tokens and sampling), the SSE events come in the documented order, and the
// store is bounded.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/anthropic_messages.h"
#include "server/api_error.h"
#include "server/fake_engine.h"
#include "server/openai_request.h"
#include "server/openai_responses.h"
#include "server/response_store.h"

namespace pagoda::server {
namespace {

using nlohmann::json;

// "event: X\ndata: {...}\n\n" -> [(X, data)].
std::vector<std::pair<std::string, json>> parse_events(const std::string& sse) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    const size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos) << sse.substr(pos);
    if (end == std::string::npos) break;
    const std::string ev = sse.substr(pos, end - pos);
    pos = end + 2;
    const size_t nl = ev.find('\n');
    EXPECT_EQ(ev.substr(0, 7), "event: ");
    EXPECT_EQ(ev.substr(nl + 1, 6), "data: ");
    out.emplace_back(ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7)));
  }
  return out;
}

std::vector<std::string> names(const std::vector<std::pair<std::string, json>>& events) {
  std::vector<std::string> n;
  for (const auto& [name, data] : events) {
    EXPECT_EQ(data["type"], name);  // the data's type repeats the event name
    n.push_back(name);
  }
  return n;
}

class ForeignApiTest : public ::testing::Test {
 protected:
  GenerationSpec chat_spec(const json& chat) {
    GenerationSpec spec;
    auto err = parse_generation_request(chat.dump(), Endpoint::kChat, engine_, cfg_, spec);
    EXPECT_FALSE(err) << err->message;
    return spec;
  }
  std::optional<ApiError> messages(const json& body, GenerationSpec& spec) {
    return parse_messages_request(body.dump(), engine_, cfg_, spec);
  }
  std::optional<ApiError> responses(const json& body, ResponsesRequest& out) {
    return parse_responses_request(body.dump(), engine_, cfg_, store_, out);
  }
  static json user(const std::string& text) {
    return json::array({{{"role", "user"}, {"content", text}}});
  }

  static pagoda::testing::FakeEngineOptions options() {
    pagoda::testing::FakeEngineOptions o;
    o.context_length = 4096;  // the fake template renders the messages' JSON: long prompts
    return o;
  }

  pagoda::testing::FakeEngine engine_{options()};
  ServerConfig cfg_;
  ResponseStore store_{100, 1 << 20, std::chrono::seconds(60)};
};

const json kSchema = {
    {"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};

TEST_F(ForeignApiTest, MessagesTranslateToTheEquivalentChatRequest) {
  const json body = {
      {"model", "fake-model"},
      {"max_tokens", 7},
      {"system", json::array({{{"type", "text"}, {"text", "be brief"}},
                              {{"type", "text"}, {"text", "be kind"}}})},
      {"stop_sequences", {"END"}},
      {"temperature", 0.5},
      {"top_k", 5},
      {"metadata", {{"user_id", "u"}}},
      {"messages",
       json::array(
           {{{"role", "user"}, {"content", "weather?"}},
            {{"role", "assistant"},
             {"content", json::array({{{"type", "text"}, {"text", "let me see"}},
                                      {{"type", "tool_use"},
                                       {"id", "t1"},
                                       {"name", "get"},
                                       {"input", {{"city", "Oslo"}}}}})}},
            {{"role", "user"},
             {"content",
              json::array({{{"type", "tool_result"},
                            {"tool_use_id", "t1"},
                            {"content", json::array({{{"type", "text"}, {"text", "cold"}}})}},
                           {{"type", "text"}, {"text", "thanks"}}})}}})},
      {"tools", json::array({{{"name", "get"}, {"description", "d"}, {"input_schema", kSchema}}})},
      {"tool_choice", {{"type", "auto"}}}};
  json chat;
  ASSERT_FALSE(messages_to_chat_request(body, false, chat));
  const json expected_messages = json::array(
      {{{"role", "system"}, {"content", "be brief\nbe kind"}},
       {{"role", "user"}, {"content", "weather?"}},
       {{"role", "assistant"},
        {"content", "let me see"},
        {"tool_calls",
         json::array({{{"id", "t1"},
                       {"type", "function"},
                       {"function", {{"name", "get"}, {"arguments", "{\"city\":\"Oslo\"}"}}}}})}},
       {{"role", "tool"}, {"tool_call_id", "t1"}, {"content", "cold"}},
       {{"role", "user"}, {"content", "thanks"}}});
  EXPECT_EQ(chat["messages"], expected_messages);
  EXPECT_EQ(chat["tools"],
            json::array({{{"type", "function"},
                          {"function",
                           {{"name", "get"}, {"parameters", kSchema}, {"description", "d"}}}}}));
  EXPECT_EQ(chat["tool_choice"], "auto");
  EXPECT_EQ(chat["stop"], json::array({"END"}));
  EXPECT_EQ(chat["max_tokens"], 7);
  EXPECT_EQ(chat["top_k"], 5);
  EXPECT_FALSE(chat.contains("metadata"));

  // The spec is exactly the chat request's.
  GenerationSpec spec;
  auto err = messages(body, spec);
  ASSERT_FALSE(err) << err->message;
  const GenerationSpec want = chat_spec(chat);
  EXPECT_EQ(spec.prompts[0].tokens, want.prompts[0].tokens);
  EXPECT_EQ(spec.prompts[0].text, want.prompts[0].text);
  EXPECT_EQ(spec.stop.stop_strings, std::vector<std::string>{"END"});
  EXPECT_EQ(spec.stop.max_tokens, 7);
  EXPECT_FLOAT_EQ(spec.sampling.temperature, 0.5f);
  EXPECT_EQ(spec.sampling.top_k, 5);

  int64_t count = 0;
  json count_body = body;
  for (const char* k : {"max_tokens", "stop_sequences", "temperature", "top_k", "metadata"})
    count_body.erase(k);
  ASSERT_FALSE(count_message_tokens(count_body.dump(), engine_, cfg_, count));
  EXPECT_EQ(count, static_cast<int64_t>(want.prompts[0].tokens.size()));
}

TEST_F(ForeignApiTest, MessagesToolChoiceMapping) {
  const auto mapped = [](const json& choice) {
    json body = {{"model", "m"},
                 {"max_tokens", 1},
                 {"messages", user("x")},
                 {"tools", json::array({{{"name", "get"}, {"input_schema", kSchema}}})},
                 {"tool_choice", choice}};
    json chat;
    auto err = messages_to_chat_request(body, false, chat);
    EXPECT_FALSE(err) << err->message;
    return chat;
  };
  EXPECT_EQ(mapped({{"type", "any"}})["tool_choice"], "required");
  EXPECT_EQ(mapped({{"type", "none"}})["tool_choice"], "none");
  const json named =
      mapped({{"type", "tool"}, {"name", "get"}, {"disable_parallel_tool_use", true}});
  EXPECT_EQ(named["tool_choice"], json({{"type", "function"}, {"function", {{"name", "get"}}}}));
  EXPECT_EQ(named["parallel_tool_calls"], false);
}

TEST_F(ForeignApiTest, MessagesRefusalsNameTheField) {
  const json ok = {{"model", "fake-model"}, {"max_tokens", 4}, {"messages", user("hi")}};
  const auto param = [&](json body) -> std::string {
    GenerationSpec spec;
    auto err = messages(body, spec);
    return err ? err->param : "<ok>";
  };
  EXPECT_EQ(param(ok), "<ok>");
  json b = ok;
  b.erase("max_tokens");
  EXPECT_EQ(param(b), "max_tokens");
  b = ok;
  b["thinking"] = {{"type", "enabled"}};
  EXPECT_EQ(param(b), "thinking");
  b = ok;
  b["n"] = 2;  // an OpenAI field is not an Anthropic one
  EXPECT_EQ(param(b), "n");
  b = ok;
  b["messages"][0]["content"] = json::array({{{"type", "image"}, {"source", json::object()}}});
  EXPECT_EQ(param(b), "messages[0].content[0].type");
  b = ok;
  b["messages"][0]["role"] = "system";
  EXPECT_EQ(param(b), "messages[0].role");
  b = ok;
  b["messages"][0]["content"] =
      json::array({{{"type", "tool_use"}, {"id", "x"}, {"name", "n"}, {"input", json::object()}}});
  EXPECT_EQ(param(b), "messages[0].content[0].type");  // tool_use belongs to the assistant
  b = ok;
  b["temperature"] = 1.5;
  EXPECT_EQ(param(b), "temperature");
  b = ok;
  b["stop_sequences"] = json::array({""});
  EXPECT_EQ(param(b), "stop_sequences");
  b = ok;
  b["tools"] = json::array({{{"type", "web_search_20250305"}, {"name", "web_search"}}});
  EXPECT_EQ(param(b), "tools[0].type");
  b = ok;
  b["tool_choice"] = {{"type", "sometimes"}};
  EXPECT_EQ(param(b), "tool_choice.type");
  // Keys of blocks and tools are checked too; cache_control is accepted (prefix caching is
  // automatic).
  b = ok;
  b["messages"][0]["content"] =
      json::array({{{"type", "text"}, {"text", "hi"}, {"cache_control", {{"type", "ephemeral"}}}}});
  EXPECT_EQ(param(b), "<ok>");
  b = ok;
  b["messages"][0]["content"] =
      json::array({{{"type", "text"}, {"text", "hi"}, {"citations", json::array()}}});
  EXPECT_EQ(param(b), "messages[0].content[0].citations");
  b = ok;
  b["system"] = json::array({{{"type", "text"}, {"text", "be brief"}, {"colour", "red"}}});
  EXPECT_EQ(param(b), "system[0].colour");
  b = ok;
  b["tools"] = json::array({{{"name", "f"},
                             {"input_schema", {{"type", "object"}}},
                             {"cache_control", {{"type", "ephemeral"}}}}});
  EXPECT_EQ(param(b), "<ok>");
  b["tools"][0]["input_examples"] = json::array();
  EXPECT_EQ(param(b), "tools[0].input_examples");
  b = ok;
  b["messages"] = json::array({{{"role", "user"}, {"content", "hi"}},
                               {{"role", "assistant"},
                                {"content", json::array({{{"type", "tool_use"},
                                                          {"id", "x"},
                                                          {"name", "f"},
                                                          {"input", json::object()},
                                                          {"caller", "me"}}})}}});
  EXPECT_EQ(param(b), "messages[1].content[0].caller");
  b = ok;
  b["model"] = "claude";
  GenerationSpec spec;
  auto err = messages(b, spec);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->status, 404);
  const json shaped = json::parse(err->body(ErrorShape::kAnthropic));
  EXPECT_EQ(shaped["type"], "error");
  EXPECT_EQ(shaped["error"]["type"], "not_found_error");
  EXPECT_EQ(shaped["error"]["message"], err->message);
}

TEST(AnthropicErrors, ShapeByPathAndTypeByStatus) {
  EXPECT_EQ(error_shape_for_path("/v1/messages"), ErrorShape::kAnthropic);
  EXPECT_EQ(error_shape_for_path("/v1/messages/count_tokens"), ErrorShape::kAnthropic);
  EXPECT_EQ(error_shape_for_path("/v1/messagesx"), ErrorShape::kOpenAI);
  EXPECT_EQ(error_shape_for_path("/v1/responses"), ErrorShape::kOpenAI);
  const auto type = [](const ApiError& e) {
    return json::parse(e.body(ErrorShape::kAnthropic))["error"]["type"].get<std::string>();
  };
  EXPECT_EQ(type(bad_request("x")), "invalid_request_error");
  EXPECT_EQ(type(unauthorized()), "authentication_error");
  EXPECT_EQ(type(payload_too_large(1)), "request_too_large");
  EXPECT_EQ(type(too_many_requests("x", "queue_full", 1)), "rate_limit_error");
  EXPECT_EQ(type(unavailable("x", 1)), "overloaded_error");
  EXPECT_EQ(type(internal("x")), "api_error");
}

TEST(AnthropicEncoder, StreamedEventsInOrder) {
  AnthropicMessageEncoder enc("msg_1", "m", 12);
  std::string sse = enc.stream_begin();
  ParsedDelta text;
  text.content = "Hel";
  sse += enc.stream_delta(text);
  text.content = "lo";
  sse += enc.stream_delta(text);
  ParsedDelta call;
  call.tool_calls.push_back(ToolCallDelta{0, "c0", "get", "{\"ci"});
  sse += enc.stream_delta(call);
  call.tool_calls[0] = ToolCallDelta{0, "", "", "ty\": \"Oslo\"}"};
  sse += enc.stream_delta(call);
  ChoiceResult done;
  done.text = "Hello";
  done.tool_calls.push_back(ToolCallResult{"c0", "get", "{\"city\": \"Oslo\"}"});
  done.finish_reason = FinishReason::kStop;
  UsageTotals usage{12, 9, 4};
  sse += enc.stream_end(done, usage);
  const auto events = parse_events(sse);
  EXPECT_EQ(names(events), (std::vector<std::string>{
                               "message_start", "content_block_start", "ping",
                               "content_block_delta", "content_block_delta", "content_block_stop",
                               "content_block_start", "content_block_delta", "content_block_delta",
                               "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(events[0].second["message"]["usage"]["input_tokens"], 12);
  EXPECT_EQ(events[1].second["content_block"], json({{"type", "text"}, {"text", ""}}));
  EXPECT_EQ(events[4].second["delta"], json({{"type", "text_delta"}, {"text", "lo"}}));
  EXPECT_EQ(events[6].second["index"], 1);
  EXPECT_EQ(events[6].second["content_block"]["type"], "tool_use");
  EXPECT_EQ(events[6].second["content_block"]["id"], "c0");
  EXPECT_EQ(json::parse(events[7].second["delta"]["partial_json"].get<std::string>() +
                        events[8].second["delta"]["partial_json"].get<std::string>()),
            json({{"city", "Oslo"}}));
  EXPECT_EQ(events[10].second["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(events[10].second["usage"]["output_tokens"], 9);
  EXPECT_EQ(events[10].second["usage"]["cache_read_input_tokens"], 4);
  EXPECT_EQ(events[10].second["usage"]["input_tokens"], 8);

  const json full =
      json::parse(AnthropicMessageEncoder("msg_1", "m", 12).full_response(done, usage));
  EXPECT_EQ(
      full["content"],
      json::array(
          {{{"type", "text"}, {"text", "Hello"}},
           {{"type", "tool_use"}, {"id", "c0"}, {"name", "get"}, {"input", {{"city", "Oslo"}}}}}));
  EXPECT_EQ(full["stop_reason"], "tool_use");
}

TEST(AnthropicEncoder, StopReasons) {
  std::string seq;
  ChoiceResult c;
  c.finish_reason = FinishReason::kStop;
  EXPECT_EQ(anthropic_stop_reason(c, seq), "end_turn");
  c.stop_reason = "END";
  EXPECT_EQ(anthropic_stop_reason(c, seq), "stop_sequence");
  EXPECT_EQ(seq, "END");
  c.finish_reason = FinishReason::kLength;
  EXPECT_EQ(anthropic_stop_reason(c, seq), "max_tokens");
  EXPECT_EQ(seq, "");
  // An empty answer still opens with message_start and a ping and closes properly.
  AnthropicMessageEncoder enc("msg_1", "m", 3);
  const auto events = parse_events(enc.stream_begin() + enc.stream_end(c, UsageTotals{3, 0, 0}));
  EXPECT_EQ(names(events),
            (std::vector<std::string>{"message_start", "ping", "message_delta", "message_stop"}));
  const auto err = parse_events(enc.stream_error(bad_request("boom")));
  ASSERT_EQ(err.size(), 1u);
  EXPECT_EQ(err[0].second["error"]["type"], "invalid_request_error");
}

TEST_F(ForeignApiTest, ResponsesTranslateToTheEquivalentChatRequest) {
  const json body = {
      {"model", "fake-model"},
      {"instructions", "be brief"},
      {"max_output_tokens", 9},
      {"temperature", 0.3},
      {"input",
       json::array(
           {{{"role", "developer"}, {"content", "dev"}},
            {{"type", "message"},
             {"role", "user"},
             {"content", json::array({{{"type", "input_text"}, {"text", "a"}},
                                      {{"type", "input_text"}, {"text", "b"}}})}},
            {{"role", "assistant"}, {"content", "ok"}},
            {{"type", "function_call"}, {"call_id", "c1"}, {"name", "get"}, {"arguments", "{}"}},
            {{"type", "function_call"}, {"call_id", "c2"}, {"name", "get"}, {"arguments", "{}"}},
            {{"type", "function_call_output"}, {"call_id", "c1"}, {"output", "r1"}}})},
      {"tools", json::array({{{"type", "function"}, {"name", "get"}, {"parameters", kSchema}}})},
      {"tool_choice", {{"type", "function"}, {"name", "get"}}},
      {"text", {{"format", {{"type", "json_schema"}, {"name", "x"}, {"schema", kSchema}}}}}};
  ResponsesRequest rr;
  ASSERT_FALSE(responses_to_chat_request(body, &store_, rr));
  const json call = [](const char* id) {
    return json{
        {"id", id}, {"type", "function"}, {"function", {{"name", "get"}, {"arguments", "{}"}}}};
  }("c1");
  json c2 = call;
  c2["id"] = "c2";
  const json conversation = json::array(
      {{{"role", "system"}, {"content", "dev"}},
       {{"role", "user"}, {"content", "a\nb"}},
       {{"role", "assistant"}, {"content", "ok"}, {"tool_calls", json::array({call, c2})}},
       {{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "r1"}}});
  EXPECT_EQ(rr.conversation, conversation);
  json messages = json::array({{{"role", "system"}, {"content", "be brief"}}});
  for (const json& m : conversation)
    messages.push_back(m);
  EXPECT_EQ(rr.chat["messages"], messages);
  EXPECT_EQ(rr.chat["max_tokens"], 9);
  EXPECT_EQ(rr.chat["tools"][0],
            json({{"type", "function"}, {"function", {{"name", "get"}, {"parameters", kSchema}}}}));
  EXPECT_EQ(rr.chat["tool_choice"], json({{"type", "function"}, {"function", {{"name", "get"}}}}));
  EXPECT_EQ(rr.chat["response_format"],
            json({{"type", "json_schema"}, {"json_schema", {{"name", "x"}, {"schema", kSchema}}}}));
  EXPECT_EQ(rr.echo["instructions"], "be brief");
  EXPECT_TRUE(rr.store);

  // A string input is one user message; the spec is the chat request's.
  ResponsesRequest simple;
  ASSERT_FALSE(
      responses({{"model", "fake-model"}, {"input", "hi"}, {"max_output_tokens", 3}}, simple));
  const GenerationSpec want = chat_spec({{"messages", user("hi")}, {"max_tokens", 3}});
  EXPECT_EQ(simple.spec.prompts[0].tokens, want.prompts[0].tokens);
  EXPECT_EQ(simple.spec.stop.max_tokens, 3);
}

TEST_F(ForeignApiTest, ResponsesRefusalsNameTheField) {
  const json ok = {{"model", "fake-model"}, {"input", "hi"}};
  const auto param = [&](json body) -> std::string {
    ResponsesRequest rr;
    auto err = responses(body, rr);
    if (err) {
      EXPECT_EQ(err->status, 400) << err->message;
    }
    return err ? err->param : "<ok>";
  };
  EXPECT_EQ(param(ok), "<ok>");
  json b = ok;
  b.erase("input");
  EXPECT_EQ(param(b), "input");
  b = ok;
  b["reasoning"] = {{"effort", "low"}};
  EXPECT_EQ(param(b), "reasoning");
  b = ok;
  b["max_output_tokens"] = 0;
  EXPECT_EQ(param(b), "max_output_tokens");
  b = ok;
  b["max_output_tokens"] = 100000;  // beyond the context
  EXPECT_EQ(param(b), "max_output_tokens");
  b = ok;
  b["input"] = json::array({{{"type", "reasoning"}, {"summary", json::array()}}});
  EXPECT_EQ(param(b), "input[0].type");
  b = ok;
  b["input"] = json::array({{{"type", "function_call"}, {"call_id", "c"}, {"name", "n"}}});
  EXPECT_EQ(param(b), "input[0].arguments");
  b = ok;
  b["tools"] = json::array({{{"type", "file_search"}}});
  EXPECT_EQ(param(b), "tools[0].type");
  b = ok;
  b["tools"] = json::array({{{"type", "function"}, {"name", "f"}, {"defer_loading", true}}});
  EXPECT_EQ(param(b), "tools[0].defer_loading");
  b = ok;
  b["text"] = {{"format", {{"type", "json_schema"}, {"name", "x"}}}};
  EXPECT_EQ(param(b), "text.format.schema");
  b = ok;
  b["truncation"] = "auto";
  EXPECT_EQ(param(b), "truncation");
  b = ok;
  b["previous_response_id"] = "resp_missing";
  EXPECT_EQ(param(b), "previous_response_id");
}

TEST_F(ForeignApiTest, ResponsesStreamAndStoreContinue) {
  ResponsesRequest rr;
  ASSERT_FALSE(responses({{"model", "fake-model"}, {"input", "hi"}, {"instructions", "sys"}}, rr));
  ResponsesEncoder enc("resp_1", "fake-model", 100, rr, &store_);
  std::string sse = enc.stream_begin();
  ParsedDelta d;
  d.content = "He";
  sse += enc.stream_delta(d);
  d.content = "y";
  sse += enc.stream_delta(d);
  ChoiceResult done;
  done.text = "Hey";
  done.finish_reason = FinishReason::kStop;
  sse += enc.stream_end(done, UsageTotals{10, 2, 0});
  const auto events = parse_events(sse);
  EXPECT_EQ(names(events),
            (std::vector<std::string>{"response.created", "response.in_progress",
                                      "response.output_item.added", "response.content_part.added",
                                      "response.output_text.delta", "response.output_text.delta",
                                      "response.output_text.done", "response.content_part.done",
                                      "response.output_item.done", "response.completed"}));
  for (size_t i = 0; i < events.size(); ++i)
    EXPECT_EQ(events[i].second["sequence_number"], static_cast<int64_t>(i));
  EXPECT_EQ(events[0].second["response"]["status"], "in_progress");
  EXPECT_EQ(events[6].second["text"], "Hey");
  const json final = events.back().second["response"];
  EXPECT_EQ(final["status"], "completed");
  EXPECT_EQ(final["output"][0]["content"][0]["text"], "Hey");
  EXPECT_EQ(final["output"][0]["id"], events[2].second["item"]["id"]);
  EXPECT_EQ(final["usage"]["total_tokens"], 12);
  EXPECT_EQ(final["instructions"], "sys");

  // Stored: GET returns the final object, and a continuation sees the whole conversation
  // (without the old instructions).
  auto stored = store_.get("resp_1");
  ASSERT_TRUE(stored);
  EXPECT_EQ(json::parse(stored->response_json), final);
  ResponsesRequest next;
  ASSERT_FALSE(responses(
      {{"model", "fake-model"}, {"previous_response_id", "resp_1"}, {"input", "more"}}, next));
  EXPECT_EQ(next.chat["messages"], json::array({{{"role", "user"}, {"content", "hi"}},
                                                {{"role", "assistant"}, {"content", "Hey"}},
                                                {{"role", "user"}, {"content", "more"}}}));
  EXPECT_EQ(next.echo["previous_response_id"], "resp_1");
}

TEST_F(ForeignApiTest, ResponsesFullObjectIncompleteAndNotStored) {
  ResponsesRequest rr;
  ASSERT_FALSE(responses({{"model", "fake-model"}, {"input", "hi"}, {"store", false}}, rr));
  ResponsesEncoder enc("resp_2", "fake-model", 100, rr, &store_);
  ChoiceResult c;
  c.text = "abc";
  c.tool_calls.push_back(ToolCallResult{"call_1", "get", "{\"city\":\"x\"}"});
  c.finish_reason = FinishReason::kLength;
  const json r = json::parse(enc.full_response(c, UsageTotals{5, 7, 1}));
  EXPECT_EQ(r["status"], "incomplete");
  EXPECT_EQ(r["incomplete_details"], json({{"reason", "max_output_tokens"}}));
  ASSERT_EQ(r["output"].size(), 2u);
  EXPECT_EQ(r["output"][0]["type"], "message");
  EXPECT_EQ(r["output"][1], json({{"type", "function_call"},
                                  {"id", "fc_call_1"},
                                  {"call_id", "call_1"},
                                  {"name", "get"},
                                  {"arguments", "{\"city\":\"x\"}"},
                                  {"status", "completed"}}));
  EXPECT_EQ(r["usage"]["input_tokens_details"]["cached_tokens"], 1);
  EXPECT_EQ(r["store"], false);
  EXPECT_FALSE(store_.get("resp_2"));
}

TEST(ResponseStore, BoundedByEntriesBytesAndTtl) {
  using Clock = ResponseStore::Clock;
  const Clock::time_point t0 = Clock::now();
  ResponseStore s(2, 100, std::chrono::seconds(10));
  EXPECT_TRUE(s.put("a", {"x", "y"}, t0));
  EXPECT_TRUE(s.put("b", {"x", "y"}, t0));
  EXPECT_TRUE(s.put("c", {"x", "y"}, t0));  // evicts the oldest
  EXPECT_FALSE(s.get("a", t0));
  EXPECT_TRUE(s.get("b", t0));
  EXPECT_EQ(s.size(), 2u);
  EXPECT_FALSE(s.put("big", {std::string(200, 'x'), ""}, t0));  // larger than the whole store
  EXPECT_EQ(s.size(), 2u);
  EXPECT_TRUE(s.put("d", {std::string(98, 'x'), ""}, t0));  // room by bytes: both others go
  EXPECT_EQ(s.size(), 1u);
  EXPECT_LE(s.bytes(), 100u);
  EXPECT_TRUE(s.get("d", t0 + std::chrono::seconds(9)));
  EXPECT_FALSE(s.get("d", t0 + std::chrono::seconds(10)));  // expired
  EXPECT_EQ(s.size(), 0u);
  EXPECT_EQ(s.bytes(), 0u);
  EXPECT_TRUE(s.put("e", {"1", "2"}, t0));
  EXPECT_TRUE(s.erase("e", t0));
  EXPECT_FALSE(s.erase("e", t0));
  EXPECT_FALSE(s.get("e", t0));
}

}  // namespace
}  // namespace pagoda::server
