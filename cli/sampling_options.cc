#include "cli/sampling_options.h"

namespace pagoda::cli {

SamplingParams default_cli_sampling() {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  return p;
}

void add_sampling_options(CLI::App* cmd, SamplingParams& p, int64_t& seed) {
  cmd->add_option("--temp,--temperature", p.temperature, "Sampling temperature (0 = greedy)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--top-k", p.top_k, "Keep the k most likely tokens (0 = off)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--top-p", p.top_p, "Nucleus sampling mass (1 = off)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--min-p", p.min_p, "Drop tokens below min_p x the top probability")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--repeat-penalty", p.repetition_penalty, "Repetition penalty (1 = off)")
      ->check(CLI::Range(0.0, 100.0));
  cmd->add_option("--presence-penalty", p.presence_penalty, "Presence penalty")
      ->check(CLI::Range(-2.0, 2.0));
  cmd->add_option("--frequency-penalty", p.frequency_penalty, "Frequency penalty")
      ->check(CLI::Range(-2.0, 2.0));
  cmd->add_option("--seed", seed, "Random seed (-1 = random)")
      ->check(CLI::Range(int64_t{-1}, INT64_MAX));
}

}  // namespace pagoda::cli
