// The sampling flags `run` and `chat` share (llama.cpp's names), filling a SamplingParams.
#pragma once

#include <cstdint>

#include <CLI/CLI.hpp>

#include "pagoda/sampling_params.h"

namespace pagoda::cli {

// llama.cpp's defaults: temperature 0.8, top-k 40, top-p 0.95, min-p 0.05.
SamplingParams default_cli_sampling();

// Adds --temp, --top-k, --top-p, --min-p, the penalties and --seed (-1: random) to `cmd`.
void add_sampling_options(CLI::App* cmd, SamplingParams& params, int64_t& seed);

}  // namespace pagoda::cli
