// SequenceOutputState: turns one sequence's scheduler events (RequestEvent: new token ids,
// logprobs, token-level finishes) into the public RequestOutput deltas a caller streams:
//  - text through an IncrementalDetokenizer (every delta is complete, valid UTF-8), then a
//    StopStringMatcher (no prefix of a stop string is ever emitted; a match cuts the text and
//    finishes the sequence with FinishReason::kStop and stop_reason = the string);
//  - a stop token (EOS or stop_token_ids) contributes no text unless include_stop_str_in_output;
//  - on finish: held-back text flushed (length / stop token), usage and timings filled.
// One state per sequence (a forked sample has its own); not thread-safe (the engine loop owns it).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/request.h"
#include "engine/request_event.h"
#include "engine/stop_strings.h"
#include "pagoda/engine.h"
#include "tokenizer/detokenizer.h"

namespace pagoda::engine {

// Per request (shared by its samples).
struct OutputOptions {
  std::string request_id;
  bool skip_special_tokens = true;
  bool include_stop_str_in_output = false;
  std::shared_ptr<const StopStringSet> stop_strings;   // null: none
  std::shared_ptr<const std::vector<TokenId>> prompt;  // never null
};

class SequenceOutputState {
 public:
  // `tokenizer` must outlive the state. `arrival` is the request's arrival time.
  SequenceOutputState(const tokenizer::Tokenizer& tokenizer,
                      std::shared_ptr<const OutputOptions> options, int32_t index,
                      Clock::time_point arrival);

  struct Processed {
    RequestOutput output;
    // A stop string ended the sequence although the scheduler still runs it: the caller must
    // abort it in the scheduler (the output already reports kStop).
    bool needs_abort = false;
  };
  // One scheduler event (new tokens and/or the scheduler's finish) -> one delta.
  // `error` is the message for FinishReason::kError. Precondition: !finished().
  Processed process(const RequestEvent& event, Clock::time_point now,
                    const std::string& error = "");

  // A final output with no new tokens (abort, error or shutdown of a sequence with no event).
  RequestOutput finish_without_event(FinishReason reason, Clock::time_point now,
                                     const std::string& error = "");

  bool finished() const { return finished_; }
  int32_t index() const { return index_; }
  int64_t num_output_tokens() const { return num_output_tokens_; }

 private:
  RequestOutput make_output() const;
  void fill_final(RequestOutput& out, FinishReason reason, Clock::time_point now);

  std::shared_ptr<const OutputOptions> options_;
  int32_t index_;
  tokenizer::IncrementalDetokenizer detokenizer_;
  StopStringMatcher matcher_;
  bool finished_ = false;
  int64_t num_output_tokens_ = 0;
  int64_t num_prompt_tokens_ = 0;
  int64_t num_cached_tokens_ = 0;
  Clock::time_point arrival_;
  std::optional<Clock::time_point> first_scheduled_;
  std::optional<Clock::time_point> first_token_;
  std::optional<Clock::time_point> last_token_;
};

}  // namespace pagoda::engine
