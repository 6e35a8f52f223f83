// SseRelay: events pass through as soon as they are complete, a partial event is held, and a cut
// stream ends with finish_reason "error" chunks (ids copied from the last event), an error event
// and [DONE] — parsed back here as a client would.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "router/sse_relay.h"

namespace pagoda::router {
namespace {

using json = nlohmann::json;

// The data payloads of an SSE byte stream, as the OpenAI SDKs split it (events end at a blank
// line; "data:" lines carry the payload).
std::vector<std::string> data_of(const std::string& stream) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (true) {
    size_t end = stream.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string event = stream.substr(pos, end - pos);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    pos = end + 2;
  }
  EXPECT_EQ(pos, stream.size()) << "trailing partial event";
  return out;
}

const std::string kEvent1 =
    R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"demo","choices":[{"index":0,"delta":{"content":"a"}}]})"
    "\n\n";

TEST(SseRelay, ForwardsCompleteEventsAndHoldsTheTail) {
  SseRelay r;
  EXPECT_EQ(r.push(kEvent1.substr(0, 10)), "");
  EXPECT_EQ(r.push(kEvent1.substr(10)), kEvent1);
  std::string two = kEvent1 + kEvent1;
  EXPECT_EQ(r.push(two + "data: {\"par"), two);
  EXPECT_EQ(r.flush(), "data: {\"par");
  EXPECT_EQ(r.flush(), "");
}

TEST(SseRelay, CutChatStreamEndsWithErrorChunkErrorEventAndDone) {
  SseRelay r;
  std::string forwarded = r.push(kEvent1 + "data: {\"id\":\"chatcmpl-1\",\"obj");  // cut mid-event
  forwarded += r.error_events("/v1/chat/completions", 2, http::ErrorShape::kOpenAI, "replica died");
  std::vector<std::string> data = data_of(forwarded);
  ASSERT_EQ(data.size(), 4u);
  json chunk = json::parse(data[1]);
  EXPECT_EQ(chunk["id"], "chatcmpl-1");
  EXPECT_EQ(chunk["created"], 7);
  EXPECT_EQ(chunk["model"], "demo");
  EXPECT_EQ(chunk["object"], "chat.completion.chunk");
  ASSERT_EQ(chunk["choices"].size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(chunk["choices"][i]["index"], i);
    EXPECT_EQ(chunk["choices"][i]["finish_reason"], "error");
    EXPECT_TRUE(chunk["choices"][i]["delta"].is_object());
  }
  json error = json::parse(data[2]);
  EXPECT_EQ(error["error"]["message"], "replica died");
  EXPECT_EQ(error["error"]["type"], "server_error");
  EXPECT_EQ(error["error"]["code"], "upstream_stream_cut");
  EXPECT_EQ(data[3], "[DONE]");
}

TEST(SseRelay, CompletionsAndOtherEndpoints) {
  SseRelay r;
  std::vector<std::string> data =
      data_of(r.error_events("/v1/completions", 1, http::ErrorShape::kOpenAI, "x"));
  ASSERT_EQ(data.size(), 3u);
  json chunk = json::parse(data[0]);
  EXPECT_EQ(chunk["object"], "text_completion");
  EXPECT_EQ(chunk["choices"][0]["text"], "");
  EXPECT_EQ(chunk["choices"][0]["finish_reason"], "error");
  // Another API: only the error event and [DONE].
  data = data_of(r.error_events("/v1/responses", 1, http::ErrorShape::kOpenAI, "x"));
  ASSERT_EQ(data.size(), 2u);
  EXPECT_TRUE(json::parse(data[0]).contains("error"));
}

// On /v1/messages the cut stream ends as `pagoda serve` ends its own Anthropic streams: a named
// error event with Anthropic's error object, no OpenAI chunk and no [DONE] (Anthropic's SDKs
// raise on `event: error`).
TEST(SseRelay, CutAnthropicStreamEndsWithAnthropicErrorEvent) {
  SseRelay r;
  const std::string start = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n";
  EXPECT_EQ(r.push(start + "event: content_block_delta\nda"), start);  // cut mid-event
  const std::string tail =
      r.error_events("/v1/messages", 1, http::ErrorShape::kAnthropic, "replica died");
  ASSERT_TRUE(tail.starts_with("event: error\ndata: ")) << tail;
  ASSERT_TRUE(tail.ends_with("\n\n")) << tail;
  EXPECT_EQ(tail.find("[DONE]"), std::string::npos);
  const json j = json::parse(tail.substr(std::string("event: error\ndata: ").size()));
  EXPECT_EQ(j, (json{{"type", "error"},
                     {"error", {{"type", "api_error"}, {"message", "replica died"}}}}));
}

TEST(SseRelay, NothingToAddAfterDone) {
  SseRelay r;
  r.push(kEvent1 + "data: [DONE]\n\n");
  EXPECT_TRUE(r.saw_done());
  EXPECT_EQ(r.error_events("/v1/chat/completions", 1, http::ErrorShape::kOpenAI, "x"), "");
}

TEST(SseRelay, HugeEventWithoutBoundaryIsNotHeldForever) {
  SseRelay r;
  std::string big(1u << 20, 'x');
  EXPECT_EQ(r.push(big), "");
  EXPECT_EQ(r.push("y").size(), big.size() + 1);
}

}  // namespace
}  // namespace pagoda::router
