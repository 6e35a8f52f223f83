// The list of subcommands. Add a command: write commands/<name>.cc defining register_<name>,
// declare it here and list it in all_commands().
#pragma once

#include <vector>

#include "cli/command.h"
#include "pagoda/engine.h"

namespace pagoda::cli {

void register_version(CLI::App& app, CommandAction& action);
void register_logits(CLI::App& app, CommandAction& action);
void register_run(CLI::App& app, CommandAction& action);
void register_chat(CLI::App& app, CommandAction& action);
void register_inspect(CLI::App& app, CommandAction& action);
void register_tokenize(CLI::App& app, CommandAction& action);
void register_synth(CLI::App& app, CommandAction& action);
void register_quantize(CLI::App& app, CommandAction& action);
void register_convert(CLI::App& app, CommandAction& action);
void register_bench_engine(CLI::App& app, CommandAction& action);
void register_serve(CLI::App& app, CommandAction& action);
void register_bench_serve(CLI::App& app, CommandAction& action);
void register_bench_grammar(CLI::App& app, CommandAction& action);
void register_grammar(CLI::App& app, CommandAction& action);
void register_plan(CLI::App& app, CommandAction& action);
void register_perplexity(CLI::App& app, CommandAction& action);
void register_imatrix(CLI::App& app, CommandAction& action);
void register_router(CLI::App& app, CommandAction& action);
void register_run_batch(CLI::App& app, CommandAction& action);

void register_bench(CLI::App& app, CommandAction& action);
// bench engine --beam-width (bench_beam.cc): peak KV blocks of a beam request vs independent ones.
int run_bench_beam(EngineConfig cfg, int32_t beam_width, int32_t input_len, int32_t output_len,
                   uint64_t seed, bool json);

// The `bench` command group: bench.cc gives it the model-speed options; `bench engine` and
// `bench serve` are its subcommands.
inline CLI::App* bench_group(CLI::App& app) {
  auto found = app.get_subcommands([](CLI::App* a) { return a->get_name() == "bench"; });
  if (!found.empty()) return found.front();
  return app.add_subcommand(
      "bench", "Benchmark model speed (and: bench engine, bench serve, bench grammar)");
}

inline std::vector<RegisterCommand> all_commands() {
  return {
      &register_version,    &register_logits,        &register_run,     &register_chat,
      &register_inspect,    &register_tokenize,      &register_synth,   &register_quantize,
      &register_bench,      &register_bench_engine,  &register_serve,   &register_bench_serve,
      &register_convert,    &register_bench_grammar, &register_grammar, &register_plan,
      &register_perplexity, &register_imatrix,       &register_router,  &register_run_batch,
  };
}

}  // namespace pagoda::cli
