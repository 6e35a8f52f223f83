#include "cli/lora_options.h"

namespace pagoda::cli {

void add_lora_options(CLI::App* cmd, LoraOptions& o) {
  cmd->add_option("--lora", o.specs,
                  "LoRA adapter NAME=PATH (a PEFT directory or a GGUF LoRA file); requests select "
                  "it with \"model\": NAME. Repeat for several");
  cmd->add_option("--max-loras", o.max_loras, "LoRA adapters loaded at once (with runtime loads)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  cmd->add_option("--max-lora-rank", o.max_lora_rank, "Largest LoRA rank accepted")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
}

std::string apply_lora_options(const LoraOptions& o, EngineConfig& config) {
  config.max_loras = o.max_loras;
  config.max_lora_rank = o.max_lora_rank;
  for (const std::string& spec : o.specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return "--lora " + spec + ": expected NAME=PATH";
    }
    config.lora_adapters.push_back(LoraAdapterSpec{spec.substr(0, eq), spec.substr(eq + 1)});
  }
  return "";
}

}  // namespace pagoda::cli
