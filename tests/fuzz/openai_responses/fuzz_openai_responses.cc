// fuzz_openai_responses: the input is a POST /v1/responses body, checked against a store that
// holds one conversation ("resp_seed"). Any input must give a request or an ApiError with a JSON
// body, never a crash, a hang or an allocation beyond the limits; a request has one prompt that
// fits the context with its max_tokens, and its response object (encoded with the body as the
// answer's text) is JSON.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "server/fake_engine.h"
#include "server/openai_responses.h"
#include "server/response_store.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (1 << 16)) return 0;
  using namespace pagoda::server;
  static pagoda::testing::FakeEngine engine;
  static const ServerConfig config;
  static ResponseStore store(4, 1 << 16, std::chrono::hours(1));
  store.put("resp_seed", StoredResponse{"{}", R"([{"role":"user","content":"hi"},)"
                                              R"({"role":"assistant","content":"yo"}])"});
  const std::string body(reinterpret_cast<const char*>(data), size);
  ResponsesRequest request;
  if (auto err = parse_responses_request(body, engine, config, store, request)) {
    check(err->status >= 400 && err->status <= 599);
    check(!nlohmann::json::parse(err->body(), nullptr, false).is_discarded());
    return 0;
  }
  const GenerationSpec& spec = request.spec;
  check(spec.prompts.size() == 1 && spec.n == 1 && !spec.prompts[0].tokens.empty());
  check(static_cast<int64_t>(spec.prompts[0].tokens.size()) + spec.stop.max_tokens <=
        engine.model_info().context_length);
  check(request.conversation.is_array());
  ResponsesEncoder encoder("resp_x", "m", 0, request, nullptr);
  ChoiceResult choice;
  choice.text = body;
  choice.finish_reason = pagoda::FinishReason::kStop;
  const nlohmann::json r =
      nlohmann::json::parse(encoder.full_response(choice, UsageTotals{1, 1, 0}), nullptr, false);
  check(!r.is_discarded() && r["object"] == "response");
  return 0;
}
