// SseRelay: the router's view of a Server-Sent Events body it passes through. Bytes are
// forwarded as soon as they complete an event ("\n\n"); only the unfinished tail of an event is
// held (so an error event can never be glued onto half an event), and anything over 1 MiB
// without an event boundary is forwarded as is. When the upstream breaks mid-stream,
// error_events() ends the stream for the client: a final chunk per choice with finish_reason
// "error" (its id/model/created copied from the last event relayed), an OpenAI error event the
// SDKs raise as APIError, then [DONE]; on /v1/messages, Anthropic's `event: error` (the shape of
// http::ApiError::body, as `pagoda serve` writes it) and no [DONE]. Pure (no I/O); unit-tested.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "http/api_error.h"

namespace pagoda::router {

class SseRelay {
 public:
  // The bytes to forward now (complete events), holding any unfinished tail.
  std::string push(std::string_view bytes);
  // The held tail (the upstream finished cleanly).
  std::string flush();
  // The events that end a cut stream for `path` (/v1/chat/completions, /v1/completions, or
  // another: then only the error event, in `shape`), or "" if [DONE] was already relayed.
  std::string error_events(std::string_view path, int num_choices, http::ErrorShape shape,
                           const std::string& message) const;

  bool saw_done() const { return saw_done_; }
  // Data events relayed, [DONE] not counted (the router's TPOT divides by them).
  size_t num_data_events() const { return num_data_events_; }

 private:
  void note_event(std::string_view event);

  std::string held_;
  std::string last_data_;  // the JSON of the last "data: {...}" event relayed
  bool saw_done_ = false;
  size_t num_data_events_ = 0;
};

}  // namespace pagoda::router
