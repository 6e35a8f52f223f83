// Helpers for the synth/quantize tests: running the built `pagoda` binary, a per-process scratch
// folder, and comparing the logits of two models on the same prompt.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "base/status.h"

namespace pagoda::testing {

// PAGODA_BINARY_DIR/bin/pagoda.
std::filesystem::path pagoda_binary();

struct CliResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs `pagoda args...` (each argument quoted).
CliResult run_pagoda(const std::vector<std::string>& args);

// A scratch folder for this test process, removed at exit.
std::filesystem::path scratch_dir();

// The logit rows of `model_path` for a fixed prompt (prompt positions only).
Result<std::vector<std::vector<float>>> prompt_logits(const std::string& model_path);

// sqrt(mean squared difference) / sqrt(mean variance of the reference rows), over all rows.
double relative_logit_error(const std::vector<std::vector<float>>& reference,
                            const std::vector<std::vector<float>>& test);

bool all_finite(const std::vector<std::vector<float>>& rows);

}  // namespace pagoda::testing
