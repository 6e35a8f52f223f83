// Detokenize -> stop-string filter -> public delta, per sequence (see sequence_output_state.h).
#include "engine/sequence_output_state.h"

#include "base/check.h"

namespace pagoda::engine {

namespace {
double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

SequenceOutputState::SequenceOutputState(const tokenizer::Tokenizer& tokenizer,
                                         std::shared_ptr<const OutputOptions> options,
                                         int32_t index, Clock::time_point arrival)
    : options_(std::move(options)),
      index_(index),
      detokenizer_(tokenizer, options_->skip_special_tokens, *options_->prompt),
      matcher_(options_->stop_strings, options_->include_stop_str_in_output),
      num_prompt_tokens_(static_cast<int64_t>(options_->prompt->size())),
      arrival_(arrival) {}

RequestOutput SequenceOutputState::make_output() const {
  RequestOutput out;
  out.request_id = options_->request_id;
  out.index = index_;
  return out;
}

void SequenceOutputState::fill_final(RequestOutput& out, FinishReason reason,
                                     Clock::time_point now) {
  finished_ = true;
  out.finished = true;
  out.finish_reason = reason;
  out.usage.prompt_tokens = static_cast<int32_t>(num_prompt_tokens_);
  out.usage.completion_tokens = static_cast<int32_t>(num_output_tokens_);
  out.usage.cached_tokens = static_cast<int32_t>(num_cached_tokens_);
  RequestTimings& t = out.timings;
  t.e2e_seconds = seconds(now - arrival_);
  t.queue_seconds = first_scheduled_ ? seconds(*first_scheduled_ - arrival_) : t.e2e_seconds;
  if (first_token_) t.ttft_seconds = seconds(*first_token_ - arrival_);
  if (num_output_tokens_ > 1 && first_token_ && last_token_) {
    t.mean_tpot_seconds =
        seconds(*last_token_ - *first_token_) / static_cast<double>(num_output_tokens_ - 1);
  }
}

SequenceOutputState::Processed SequenceOutputState::process(const RequestEvent& ev,
                                                            Clock::time_point now,
                                                            const std::string& error) {
  PAGODA_CHECK(!finished_);
  Processed p;
  RequestOutput& out = p.output;
  out = make_output();
  num_prompt_tokens_ = ev.num_prompt_tokens > 0 ? ev.num_prompt_tokens : num_prompt_tokens_;
  num_cached_tokens_ = ev.num_cached_tokens;
  if (ev.first_scheduled_time) first_scheduled_ = ev.first_scheduled_time;

  if (!ev.new_token_ids.empty()) {
    if (!first_token_) first_token_ = now;
    last_token_ = now;
    num_output_tokens_ = ev.num_output_tokens;
    out.new_token_ids = ev.new_token_ids;
    // A stop token is the last new token; its text is streamed only on request.
    size_t num_text_tokens = ev.new_token_ids.size();
    if (ev.stop_token_id && !options_->include_stop_str_in_output) --num_text_tokens;
    size_t num_kept = ev.new_token_ids.size();
    for (size_t i = 0; i < num_text_tokens && !matcher_.matched(); ++i) {
      out.text_delta += matcher_.push(detokenizer_.push(ev.new_token_ids[i]));
      // A stop string completed by token i (several tokens per event with speculative
      // decoding): the tokens after it are discarded, as if they had never been generated.
      if (matcher_.matched()) num_kept = i + 1;
    }
    if (num_kept < ev.new_token_ids.size()) {
      num_output_tokens_ -= static_cast<int64_t>(ev.new_token_ids.size() - num_kept);
      out.new_token_ids.resize(num_kept);
    }
    for (size_t i = 0; i < ev.new_logprobs.size() && i < out.new_token_ids.size(); ++i) {
      out.logprobs.push_back(ev.new_logprobs[i]);
      out.logprobs.back().token = ev.new_token_ids[i];
    }
  }

  if (!ev.embedding.empty()) out.embedding = ev.embedding;
  std::optional<FinishReason> reason = ev.finish_reason;
  if (reason == FinishReason::kStop || reason == FinishReason::kLength) {
    // The sequence ends normally: flush what the detokenizer and the matcher hold (a stop string
    // can still complete in the detokenizer's final U+FFFD).
    if (!matcher_.matched()) out.text_delta += matcher_.push(detokenizer_.finish());
    out.text_delta += matcher_.flush();
  }
  if (matcher_.matched() && reason != FinishReason::kAbort && reason != FinishReason::kError) {
    p.needs_abort = !reason.has_value();
    reason = FinishReason::kStop;
    out.stop_reason = matcher_.matched_string();
  } else if (reason == FinishReason::kStop) {
    out.stop_token_id = ev.stop_token_id;
  }
  if (reason) {
    if (*reason == FinishReason::kAbort || *reason == FinishReason::kError) {
      out.text_delta.clear();  // a cancelled sequence streams nothing more
    }
    fill_final(out, *reason, now);
    if (*reason == FinishReason::kError) out.error = error;
  }
  return p;
}

RequestOutput SequenceOutputState::finish_without_event(FinishReason reason, Clock::time_point now,
                                                        const std::string& error) {
  PAGODA_CHECK(!finished_);
  RequestOutput out = make_output();
  fill_final(out, reason, now);
  if (reason == FinishReason::kError) out.error = error;
  return out;
}

}  // namespace pagoda::engine
