// What the ladder's levels do to a request body (pure functions on the parsed JSON; the proxy
// applies them in order of level): level 2 caps the output length, level 4 refuses costly
// features by name, level 5 may answer a preset reply. Level 1 (rate limits, queue) and 3 (the
// smaller model) act on the request's route, not its body; see proxy_session.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "http/api_error.h"

namespace pagoda::router {

// Level 2: max_tokens, max_completion_tokens and max_output_tokens above `cap` become `cap`; a
// chat or text completion without any of them gets max_tokens = cap (the server's default would
// be the whole context). True if the body changed.
bool clamp_max_tokens(nlohmann::json& body, const std::string& path, uint32_t cap);

// Level 4: the first field of `disabled` present in the body with a non-neutral value (anything
// but null, false, 0, an empty list, n/best_of 1, response_format {"type": "text"}) as a 503
// naming it (the client may retry without it, or later). Refused, never stripped: a client that
// asked for logprobs or 4 choices and silently got none would misread the answer.
std::optional<http::ApiError> refuse_disabled(const nlohmann::json& body,
                                              const std::vector<std::string>& disabled,
                                              int32_t retry_after_s);

// The requested output budget for the token-bucket estimate (max_tokens, max_completion_tokens
// or max_output_tokens, whichever is present and a non-negative integer).
std::optional<uint64_t> requested_max_tokens(const nlohmann::json& body);

// Level 5's preset reply as the endpoint's own answer: a chat.completion (or a chat SSE stream
// when `stream`), or a text_completion (or its stream). nullopt for other paths (they get 503).
struct PresetReply {
  std::string content_type;
  std::string body;
};
std::optional<PresetReply> preset_reply(const std::string& path, const std::string& model,
                                        const std::string& text, bool stream);

}  // namespace pagoda::router
