// The LoRA flags shared by `pagoda serve` and `pagoda bench engine`: --lora NAME=PATH (repeat),
// --max-loras N, --max-lora-rank R, onto EngineConfig's lora_adapters / max_loras /
// max_lora_rank.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "pagoda/engine.h"

namespace pagoda::cli {

struct LoraOptions {
  std::vector<std::string> specs;  // NAME=PATH as given
  int32_t max_loras = 8;
  int32_t max_lora_rank = 64;
};

void add_lora_options(CLI::App* cmd, LoraOptions& o);

// Fills `config`; an error message naming the bad --lora value ("" when all are fine).
std::string apply_lora_options(const LoraOptions& o, EngineConfig& config);

}  // namespace pagoda::cli
