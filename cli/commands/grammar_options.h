// The constraint flags `grammar check` and `bench engine` share: one of --json-schema FILE,
// --json-object, --regex PATTERN, --gbnf FILE, --choice TEXT (repeatable).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pagoda/sampling_params.h"
#include "pagoda/status.h"

namespace pagoda::cli {

struct ConstraintOptions {
  std::string json_schema_file, regex, gbnf_file;
  bool json_object = false;
  std::vector<std::string> choices;
};

void add_constraint_options(CLI::App* cmd, ConstraintOptions& opts);
// Exactly one must be given; files are read here.
Result<StructuredOutputs> constraint_from_options(const ConstraintOptions& opts);

}  // namespace pagoda::cli
