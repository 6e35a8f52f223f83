// Single-stream generation for `pagoda run` and `pagoda chat`: feed tokens, sample, stream text.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "loader/model_loader.h"
#include "pagoda/sampling_params.h"
#include "runner/sequence_session.h"

namespace pagoda::cli {

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (without the end-of-generation token)
  bool hit_eog = false;
};

// Feeds `input` after what the session holds, then samples up to max_new tokens, calling
// on_text with every complete UTF-8 delta. Stops at an end-of-generation token.
Result<GenerateResult> generate(loader::LoadedModel& loaded, runner::SequenceSession& session,
                                const std::vector<int32_t>& input, const SamplingParams& params,
                                int32_t max_new,
                                const std::function<void(const std::string&)>& on_text);

// Adds the sampling flags shared by run and chat to `cmd`.
void add_sampling_options(CLI::App* cmd, SamplingParams& params, int64_t& seed);

}  // namespace pagoda::cli
