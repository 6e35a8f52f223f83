// run_offline_completion (see offline_completion.h).
#include "server/offline_completion.h"

#include <ctime>
#include <mutex>
#include <vector>

#include <fmt/format.h>

#include "pagoda/output_parser.h"
#include "server/api_error.h"
#include "server/openai_response.h"

namespace pagoda::server {
namespace {

// The state of one run, shared by its engine callbacks.
struct OfflineRun {
  GenerationSpec spec;
  Engine& engine;
  OfflineDone done;
  ResponseMeta meta;
  std::mutex mu;
  std::vector<ChoiceResult> choices;  // prompt-major: prompt p, sample i -> p * n + i
  std::vector<std::unique_ptr<OutputParser>> parsers;
  std::vector<RequestUsage> usage;  // per prompt
  size_t num_unfinished = 0;
  bool failed = false;

  OfflineRun(GenerationSpec s, Engine& e, OfflineDone d)
      : spec(std::move(s)), engine(e), done(std::move(d)) {}

  void add_parts(ChoiceResult& c, const ParsedDelta& parts) {
    append_parsed(parts, c.text, c.reasoning, c.tool_calls);
  }

  // On the engine thread. Returns the result once every choice finished (or one failed).
  std::optional<OfflineResult> on_output(size_t p, RequestOutput out) {
    std::lock_guard<std::mutex> lock(mu);
    if (failed) return std::nullopt;
    const size_t idx = p * static_cast<size_t>(spec.n) + static_cast<size_t>(out.index);
    if (out.index < 0 || idx >= choices.size()) return std::nullopt;
    ChoiceResult& c = choices[idx];
    if (!out.prompt_logprobs.empty() && c.prompt_logprobs.empty()) {
      c.prompt_logprobs = std::move(out.prompt_logprobs);
    }
    if (parsers[idx]) {
      add_parts(c, parsers[idx]->feed(out.text_delta));
      if (out.finished) add_parts(c, parsers[idx]->finish());
    } else {
      c.text += out.text_delta;
    }
    if (spec.logprobs) {
      for (TokenLogprobs& lp : out.logprobs)
        c.logprobs.push_back(std::move(lp));
    }
    if (!out.finished) return std::nullopt;
    c.finish_reason = out.finish_reason;
    c.stop_reason = out.stop_reason;
    c.stop_token_id = out.stop_token_id;
    if (out.finish_reason == FinishReason::kError || out.finish_reason == FinishReason::kAbort) {
      failed = true;
      const ApiError e = out.finish_reason == FinishReason::kAbort
                             ? unavailable("the request was aborted", 1)
                         : out.error_code == StatusCode::kInvalidArgument
                             ? bad_request(out.error)
                             : internal("generation failed: " + out.error);
      return OfflineResult{e.status, meta.id, e.body()};
    }
    RequestUsage& u = usage[p];
    u.completion_tokens += out.usage.completion_tokens;
    if (out.index == 0 || u.cached_tokens == 0) u.cached_tokens = out.usage.cached_tokens;
    if (--num_unfinished > 0) return std::nullopt;
    return finish();
  }

  OfflineResult finish() {
    UsageTotals totals;
    for (size_t p = 0; p < usage.size(); ++p) {
      totals.prompt_tokens += static_cast<int64_t>(spec.prompts[p].tokens.size());
      totals.completion_tokens += usage[p].completion_tokens;
      totals.cached_tokens += usage[p].cached_tokens;
    }
    const auto n = static_cast<size_t>(spec.n);
    for (size_t i = 0; i < choices.size(); ++i) {
      ChoiceResult& c = choices[i];
      c.index = static_cast<int32_t>(i);
      const PromptInput& prompt = spec.prompts[i / n];
      if (spec.echo) c.text = prompt.text + c.text;
      if (spec.endpoint == Endpoint::kCompletion && spec.sampling.prompt_logprobs >= 0) {
        c.prompt_first_token = prompt.tokens[0];
      }
    }
    const TokenText text = [this](int32_t id) { return engine.detokenize({id}); };
    return OfflineResult{200, meta.id, full_response_json(meta, choices, totals, text)};
  }
};

}  // namespace

void run_offline_completion(GenerationSpec spec, Engine& engine, OfflineDone done) {
  auto run = std::make_shared<OfflineRun>(std::move(spec), engine, std::move(done));
  GenerationSpec& s = run->spec;
  const bool chat = s.endpoint == Endpoint::kChat;
  ResponseMeta& meta = run->meta;
  meta.endpoint = s.endpoint;
  meta.id = make_response_id(chat ? "chatcmpl-" : "cmpl-");
  meta.created = static_cast<int64_t>(std::time(nullptr));
  meta.model = s.model;
  meta.logprobs = s.logprobs;
  if (s.echo && s.logprobs) meta.echo_top_logprobs = s.top_logprobs;
  meta.prompt_logprobs = s.prompt_logprobs;
  meta.token_bytes = [&engine](int32_t id) { return engine.token_bytes(id); };
  const size_t num_prompts = s.prompts.size();
  const auto n = static_cast<size_t>(s.n);
  run->choices.resize(num_prompts * n);
  run->parsers.resize(num_prompts * n);
  run->usage.resize(num_prompts);
  run->num_unfinished = num_prompts * n;
  if (chat && (s.tool_format != ToolCallFormat::kNone || s.reasoning != ReasoningFormat::kNone)) {
    for (auto& parser : run->parsers) {
      OutputParserOptions po;
      po.tool_format = s.tool_format;
      po.reasoning = s.reasoning;
      po.id_prefix = make_response_id("call_").substr(0, 29) + "_";
      parser = std::make_unique<OutputParser>(std::move(po));
    }
  }
  std::vector<GenerateRequest> requests(num_prompts);
  for (size_t p = 0; p < num_prompts; ++p) {
    GenerateRequest& req = requests[p];
    req.request_id = num_prompts == 1 ? meta.id : fmt::format("{}-{}", meta.id, p);
    req.prompt_tokens = s.prompts[p].tokens;
    req.sampling = s.sampling;
    req.stop = s.stop;
    req.priority = s.priority;
    req.cache_salt = s.cache_salt;
    req.n = s.n;
    req.beam_search = s.beam_search;
    req.skip_special_tokens = s.skip_special_tokens;
  }
  submit_offline_requests(run, engine, std::move(requests), meta.id,
                          [](const Status& st) { return from_status(st); });
}

}  // namespace pagoda::server
