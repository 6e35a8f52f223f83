// stream_request: runs one request on a pagoda::Engine and hands its text to the caller as it
// arrives: what `pagoda run` and `pagoda chat` do with the same engine `serve` runs.
#pragma once

#include <functional>
#include <string>

#include "pagoda/engine.h"

namespace pagoda::cli {

// Adds `request` (n must be 1), calls `on_text` with every text delta (on the engine's thread,
// in order) and waits for the final output, which it returns. An error finish (the engine
// failed the request) or a refused request is an error Status.
Result<RequestOutput> stream_request(Engine& engine, GenerateRequest request,
                                     const std::function<void(const std::string&)>& on_text);

}  // namespace pagoda::cli
