// fuzz_anthropic_messages: byte 0 picks the route (even: /v1/messages, odd: count_tokens), the
// rest is the body. Any input must give a spec (or a count) or an ApiError whose Anthropic body
// is a JSON error object, never a crash, a hang or an allocation beyond the limits; a spec has
// one prompt that fits the context with its max_tokens. The body is then also fed to the Message
// encoder as a tool call's arguments (model output is untrusted too): the response must be JSON
// whose tool_use input is an object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/anthropic_messages.h"
#include "server/fake_engine.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > (1 << 16)) return 0;
  using namespace pagoda::server;
  static pagoda::testing::FakeEngine engine;
  static const ServerConfig config;
  const bool count = (data[0] & 1) != 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  std::optional<ApiError> err;
  if (count) {
    int64_t n = -1;
    err = count_message_tokens(body, engine, config, n);
    if (!err) check(n > 0 && n <= engine.model_info().context_length);
  } else {
    GenerationSpec spec;
    err = parse_messages_request(body, engine, config, spec);
    if (!err) {
      check(spec.prompts.size() == 1 && spec.n == 1 && !spec.prompts[0].tokens.empty());
      check(static_cast<int64_t>(spec.prompts[0].tokens.size()) + spec.stop.max_tokens <=
            engine.model_info().context_length);
    }
  }
  if (err) {
    check(err->status >= 400 && err->status <= 599);
    const nlohmann::json shaped = nlohmann::json::parse(err->body(ErrorShape::kAnthropic));
    check(shaped["type"] == "error" && shaped["error"]["message"].is_string());
  }
  ChoiceResult choice;
  choice.finish_reason = pagoda::FinishReason::kStop;
  choice.tool_calls.push_back(ToolCallResult{"call_0", "f", body});
  AnthropicMessageEncoder encoder("msg_0", "m", 1);
  const nlohmann::json r =
      nlohmann::json::parse(encoder.full_response(choice, UsageTotals{1, 1, 0}), nullptr, false);
  check(!r.is_discarded() && r["content"].back()["input"].is_object());
  return 0;
}
