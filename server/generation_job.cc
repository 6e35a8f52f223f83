#include "server/generation_job.h"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>
#include <boost/asio/post.hpp>

#include "server/server_state.h"

namespace pagoda::server {

namespace net = boost::asio;

namespace {

constexpr std::string_view kDone = "data: [DONE]\n\n";

Rejection rejection_for(const Status& s) {
  switch (s.code()) {
    case StatusCode::kResourceExhausted:
      return Rejection::kQueueFull;
    case StatusCode::kFailedPrecondition:
    case StatusCode::kUnavailable:
      return Rejection::kDraining;
    default:
      return Rejection::kInvalid;
  }
}

}  // namespace

GenerationJob::GenerationJob(GenerationSpec spec, Engine& engine, ServerState& state,
                             const std::shared_ptr<HttpSession>& session,
                             std::unique_ptr<ResponseEncoder> encoder)
    : spec_(std::move(spec)),
      engine_(engine),
      state_(state),
      session_(session),
      executor_(session->executor()),
      queue_timer_(executor_),
      encoder_(std::move(encoder)) {
  const bool chat = spec_.endpoint == Endpoint::kChat;
  meta_.endpoint = spec_.endpoint;
  meta_.id = make_response_id(chat ? "chatcmpl-" : "cmpl-");
  meta_.created = static_cast<int64_t>(std::time(nullptr));
  meta_.model = spec_.model;
  meta_.logprobs = spec_.logprobs;
  if (spec_.echo && spec_.logprobs) meta_.echo_top_logprobs = spec_.top_logprobs;
  meta_.prompt_logprobs = spec_.prompt_logprobs;
  meta_.token_bytes = [this](int32_t id) { return engine_.token_bytes(id); };
  token_text_fn_ = [this](int32_t id) { return token_text(id); };
}

GenerationJob::~GenerationJob() = default;

std::string GenerationJob::token_text(int32_t id) const {
  return engine_.detokenize({id});
}

void GenerationJob::start() {
  auto self = shared_from_this();
  auto s = session();
  if (!s) return;
  s->set_listener(self);
  const size_t num_prompts = spec_.prompts.size();
  const auto n = static_cast<size_t>(spec_.n);
  choices_.resize(num_prompts * n);
  if (spec_.endpoint == Endpoint::kChat &&
      (spec_.tool_format != ToolCallFormat::kNone || spec_.reasoning != ReasoningFormat::kNone)) {
    for (Choice& c : choices_) {
      OutputParserOptions po;
      po.tool_format = spec_.tool_format;
      po.reasoning = spec_.reasoning;
      po.id_prefix = make_response_id("call_").substr(0, 29) + "_";
      c.parser = std::make_unique<OutputParser>(std::move(po));
    }
  }
  num_unfinished_ = static_cast<int32_t>(choices_.size());
  request_ids_.resize(num_prompts);
  request_live_.assign(num_prompts, false);
  live_samples_.assign(num_prompts, 0);
  prompt_usage_.resize(num_prompts);
  for (size_t p = 0; p < num_prompts; ++p) {
    request_ids_[p] = num_prompts == 1 ? meta_.id : fmt::format("{}-{}", meta_.id, p);
    GenerateRequest req;
    req.request_id = request_ids_[p];
    req.prompt_tokens = spec_.prompts[p].tokens;
    req.sampling = spec_.sampling;
    req.stop = spec_.stop;
    req.priority = spec_.priority;
    req.cache_salt = spec_.cache_salt;
    req.lora_name = spec_.lora_name;
    req.n = spec_.n;
    req.beam_search = spec_.beam_search;
    req.skip_special_tokens = spec_.skip_special_tokens;
    prompt_usage_[p].prompt_tokens = static_cast<int32_t>(req.prompt_tokens.size());
    Status st = engine_.add_request(std::move(req), [self, p, exec = executor_](RequestOutput out) {
      net::post(exec,
                [self, p, out = std::move(out)]() mutable { self->on_output(p, std::move(out)); });
    });
    if (!st.ok()) {
      state_.metrics().count_rejection(rejection_for(st));
      abort_all();
      fail(from_status(st, "", state_.config().retry_after_seconds));
      return;
    }
    request_live_[p] = true;
    live_samples_[p] = spec_.n;
  }
  if (state_.config().queue_timeout.count() > 0) {
    queue_timer_.expires_after(state_.config().queue_timeout);
    queue_timer_.async_wait([self](const boost::system::error_code& ec) {
      if (!ec) self->on_queue_timeout();
    });
  }
}

void GenerationJob::on_connection_lost(AbortCause cause) {
  if (done_) return;
  done_ = true;
  queue_timer_.cancel();
  state_.metrics().count_abort(cause);
  abort_all();
}

void GenerationJob::on_queue_timeout() {
  if (done_ || any_output_) return;
  abort_all();
  state_.metrics().count_rejection(Rejection::kQueueTimeout);
  fail(from_status(make_status(StatusCode::kDeadlineExceeded,
                               "The request waited more than {} ms for the engine; retry later",
                               state_.config().queue_timeout.count()),
                   "", state_.config().retry_after_seconds));
}

void GenerationJob::abort_all() {
  for (size_t p = 0; p < request_ids_.size(); ++p) {
    if (request_live_[p]) engine_.abort(request_ids_[p]);
  }
}

void GenerationJob::on_output(size_t p, RequestOutput out) {
  // Once every engine request has finished, the model may be unloaded: the lease goes when this
  // handler returns (nothing touches the engine after the last output), not when the job object
  // does (the engine's callback may hold it a little longer).
  struct ReleaseWhenIdle {
    GenerationJob& job;
    ~ReleaseWhenIdle() {
      if (std::none_of(job.request_live_.begin(), job.request_live_.end(),
                       [](bool live) { return live; })) {
        job.lease_.reset();
      }
    }
  } release_when_idle{*this};
  if (out.finished) {
    state_.metrics().observe_finished(engine_.model_info().id, out);
    if (--live_samples_[p] <= 0) request_live_[p] = false;
  }
  if (done_) return;
  const size_t idx = p * static_cast<size_t>(spec_.n) + static_cast<size_t>(out.index);
  if (out.index < 0 || out.index >= spec_.n || idx >= choices_.size()) return;
  Choice& c = choices_[idx];
  if (c.finished) return;
  if (!any_output_) {
    any_output_ = true;
    queue_timer_.cancel();
  }
  if (!out.prompt_logprobs.empty() && c.prompt_logprobs.empty()) {
    c.prompt_logprobs = std::move(out.prompt_logprobs);
  }
  if (!out.new_token_ids.empty()) {
    const auto now = std::chrono::steady_clock::now();
    if (c.completion_tokens > 0) {
      state_.metrics().observe_inter_token(
          engine_.model_info().id, std::chrono::duration<double>(now - c.last_token_time).count());
    }
    c.last_token_time = now;
    c.completion_tokens += static_cast<int32_t>(out.new_token_ids.size());
  }
  if (out.finished) {
    c.finished = true;
    c.finish_reason = out.finish_reason;
    c.stop_reason = out.stop_reason;
    c.stop_token_id = out.stop_token_id;
    c.completion_tokens = out.usage.completion_tokens;
    if (out.index == 0 || prompt_usage_[p].cached_tokens == 0) {
      prompt_usage_[p].cached_tokens = out.usage.cached_tokens;
    }
    prompt_usage_[p].completion_tokens += out.usage.completion_tokens;
    --num_unfinished_;
    if (out.finish_reason == FinishReason::kError) {
      abort_all();
      if (out.error_code == StatusCode::kInvalidArgument) {
        fail(bad_request(out.error));  // the request's own fault (its grammar), found late
      } else {
        fail(internal(out.error.empty() ? "generation failed" : "generation failed: " + out.error));
      }
      return;
    }
    if (out.finish_reason == FinishReason::kAbort) {
      // Not ours (we would be done_): the engine is shutting down.
      state_.metrics().count_abort(AbortCause::kShutdown);
      abort_all();
      fail(unavailable("The server is shutting down; the request was aborted",
                       state_.config().retry_after_seconds));
      return;
    }
  }
  if (spec_.stream) {
    stream_output(c, static_cast<int32_t>(idx), out);
    if (done_) return;
  } else {
    ParsedDelta parts = split_text(c, out);
    accumulate(c, parts);
    if (spec_.logprobs) {
      for (TokenLogprobs& lp : out.logprobs)
        c.logprobs.push_back(std::move(lp));
    }
  }
  if (num_unfinished_ == 0) {
    if (spec_.stream) {
      finish_stream();
    } else {
      finish_non_streamed();
    }
  }
}

void GenerationJob::accumulate(Choice& c, ParsedDelta& parts) {
  append_parsed(parts, c.text, c.reasoning, c.tool_calls);
}

void GenerationJob::stream_output(Choice& c, int32_t index, const RequestOutput& out) {
  auto s = session();
  if (!s) return;
  std::string events;
  if (!stream_started_) {
    stream_started_ = true;
    s->begin_stream();
    if (encoder_) events += encoder_->stream_begin();
  }
  if (encoder_) {
    ParsedDelta split = split_text(c, out);
    events += encoder_->stream_delta(split);
    accumulate(c, split);  // the closing events repeat the whole answer
    if (!events.empty()) s->write_stream(std::move(events));
    return;
  }
  std::string text;
  bool first_chunk = false;
  if (!c.started) {
    c.started = true;
    if (spec_.endpoint == Endpoint::kChat) {
      ChunkParts role;
      role.index = index;
      role.role = true;
      role.usage_null = spec_.include_usage;
      events += sse_event(chunk_json(meta_, role, token_text_fn_));
    } else if (spec_.echo) {
      text = spec_.prompts[static_cast<size_t>(index / spec_.n)].text;
    }
    first_chunk = true;
  }
  ParsedDelta split = split_text(c, out);
  text += split.content;
  const bool has_logprobs = spec_.logprobs && !out.logprobs.empty();
  // The choice's first chunk carries its prompt logprobs (echo with logprobs, prompt_logprobs).
  const bool has_prompt =
      first_chunk && spec_.endpoint == Endpoint::kCompletion && spec_.sampling.prompt_logprobs >= 0;
  if (!text.empty() || !split.reasoning.empty() || !split.tool_calls.empty() || has_logprobs ||
      has_prompt || out.finished) {
    ChunkParts parts;
    parts.index = index;
    parts.text = text;
    parts.reasoning = split.reasoning;
    parts.tool_calls = &split.tool_calls;
    parts.made_tool_calls = c.parser && c.parser->num_tool_calls() > 0;
    parts.logprobs = has_logprobs ? &out.logprobs : nullptr;
    if (has_prompt) {
      parts.prompt.first_token = spec_.prompts[static_cast<size_t>(index / spec_.n)].tokens[0];
      parts.prompt.entries = &c.prompt_logprobs;
    }
    parts.text_offset = c.text_offset;
    parts.finish_reason = out.finished ? c.finish_reason : FinishReason::kNone;
    parts.stop_reason = c.stop_reason;
    parts.stop_token_id = c.stop_token_id;
    parts.usage_null = spec_.include_usage;
    events += sse_event(chunk_json(meta_, parts, token_text_fn_));
    c.text_offset += static_cast<int64_t>(text.size());
  }
  if (!events.empty()) s->write_stream(std::move(events));
}

ParsedDelta GenerationJob::split_text(Choice& c, const RequestOutput& out) {
  if (!c.parser) {
    ParsedDelta d;
    d.content = out.text_delta;
    return d;
  }
  ParsedDelta d = c.parser->feed(out.text_delta);
  if (out.finished) {
    ParsedDelta rest = c.parser->finish();
    d.content += rest.content;
    d.reasoning += rest.reasoning;
    for (ToolCallDelta& t : rest.tool_calls)
      d.tool_calls.push_back(std::move(t));
  }
  return d;
}

namespace {

UsageTotals totals(const std::vector<RequestUsage>& usage) {
  UsageTotals t;
  for (const RequestUsage& u : usage) {
    t.prompt_tokens += u.prompt_tokens;
    t.completion_tokens += u.completion_tokens;
    t.cached_tokens += u.cached_tokens;
  }
  return t;
}

}  // namespace

ChoiceResult GenerationJob::take_result(size_t i) {
  Choice& c = choices_[i];
  ChoiceResult r;
  r.index = static_cast<int32_t>(i);
  if (spec_.echo) r.text = spec_.prompts[i / static_cast<size_t>(spec_.n)].text;
  r.text += c.text;
  r.reasoning = std::move(c.reasoning);
  r.tool_calls = std::move(c.tool_calls);
  r.logprobs = std::move(c.logprobs);
  if (spec_.endpoint == Endpoint::kCompletion && spec_.sampling.prompt_logprobs >= 0) {
    r.prompt_first_token = spec_.prompts[i / static_cast<size_t>(spec_.n)].tokens[0];
    r.prompt_logprobs = std::move(c.prompt_logprobs);
  }
  r.finish_reason = c.finish_reason;
  r.stop_reason = c.stop_reason;
  r.stop_token_id = c.stop_token_id;
  return r;
}

void GenerationJob::finish_stream() {
  done_ = true;
  queue_timer_.cancel();
  auto s = session();
  if (!s) return;
  std::string events;
  if (encoder_) {
    s->write_stream(encoder_->stream_end(take_result(0), totals(prompt_usage_)));
    s->end_stream();
    return;
  }
  if (spec_.include_usage) events += sse_event(usage_chunk_json(meta_, totals(prompt_usage_)));
  events += kDone;
  s->write_stream(std::move(events));
  s->end_stream();
}

void GenerationJob::finish_non_streamed() {
  done_ = true;
  queue_timer_.cancel();
  auto s = session();
  if (!s) return;
  HttpResponse resp;
  if (encoder_) {
    resp.body = encoder_->full_response(take_result(0), totals(prompt_usage_));
    s->respond(std::move(resp));
    return;
  }
  std::vector<ChoiceResult> results;
  results.reserve(choices_.size());
  for (size_t i = 0; i < choices_.size(); ++i)
    results.push_back(take_result(i));
  resp.body = full_response_json(meta_, results, totals(prompt_usage_), token_text_fn_);
  s->respond(std::move(resp));
}

void GenerationJob::fail(const ApiError& error) {
  done_ = true;
  queue_timer_.cancel();
  auto s = session();
  if (!s) return;
  if (stream_started_) {
    std::string events = encoder_ ? encoder_->stream_error(error) : sse_event(error.body());
    if (!encoder_) events += kDone;
    s->write_stream(std::move(events));
    s->end_stream();
  } else {
    s->respond_error(error);
  }
}

}  // namespace pagoda::server
