// pagoda: the command-line entry point. Subcommands are registered from commands/*.cc.
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/log.h"
#include "cli/command.h"
#include "cli/commands/commands.h"
#include "pagoda/parallel.h"

namespace pagoda::cli {

int fail(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "pagoda: %s\n", line.c_str());
  return 1;
}

void add_flash_attn_flag(CLI::App* cmd, bool& flash_attention) {
  cmd->add_flag(
      "--flash-attn", flash_attention,
      "Flash attention: the online softmax (one walk over the KV blocks) instead of the exact one");
}

void add_speculative_options(CLI::App* cmd, SpeculativeConfig& spec) {
  cmd->add_flag_callback(
      "--speculative-ngram", [&spec] { spec.method = "ngram"; },
      "Speculative decoding by prompt lookup: draft the continuation of the latest earlier match "
      "of the last --ngram-min..--ngram-max tokens (no second model)");
  cmd->add_option_function<std::string>(
      "--speculative-model",
      [&spec](const std::string& path) {
        spec.method = "draft";
        spec.model = path;
      },
      "Speculative decoding with a draft model: a smaller GGUF file or HF directory with the same "
      "vocabulary drafts --num-speculative-tokens tokens per step");
  cmd->add_option_function<std::string>(
      "--speculative-self-draft",
      [&spec](const std::string& dtype) {
        spec.method = "self";
        spec.self_draft_dtype = dtype;
      },
      "Self-speculation: the model's own weight matrices re-encoded as this type at load (e.g. "
      "q4_0) draft for it; no second file");
  cmd->add_option("--ngram-min", spec.ngram_min, "Shortest n-gram matched")->capture_default_str();
  cmd->add_option("--ngram-max", spec.ngram_max, "Longest n-gram matched")->capture_default_str();
  cmd->add_option("--num-speculative-tokens", spec.num_speculative_tokens,
                  "Most draft tokens verified per request per step (k)")
      ->capture_default_str();
  cmd->add_option("--speculative-disable-batch-tokens", spec.disable_batch_tokens,
                  "No speculation in a step whose running requests compute more tokens than "
                  "this (0 = always speculate)")
      ->capture_default_str();
  cmd->add_flag_callback(
      "--no-speculative-adaptive", [&spec] { spec.adaptive = false; },
      "Always draft --num-speculative-tokens (default: k per request from its acceptance, none "
      "while drafting does not pay for its measured cost)");
}

void add_tensor_parallel_option(CLI::App* cmd, int32_t& tensor_parallel_size) {
  cmd->add_option("--tensor-parallel-size", tensor_parallel_size,
                  "Split the model across this many ranks of `mpirun -np N` (tensor parallelism)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
}

void add_expert_parallel_flag(CLI::App* cmd, bool& expert_parallel) {
  cmd->add_flag("--expert-parallel", expert_parallel,
                "Under --tensor-parallel-size, give each rank whole MoE experts (expert "
                "parallelism) instead of a share of every expert's width");
}

void add_pipeline_parallel_option(CLI::App* cmd, int32_t& pipeline_parallel_size) {
  cmd->add_option("--pipeline-parallel-size", pipeline_parallel_size,
                  "Split the layers into this many stages, one per rank of `mpirun -np N`")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
}

std::optional<int> run_as_parallel_worker(const EngineConfig& config) {
  if (parallel_size() > 1 &&
      config.tensor_parallel_size * config.pipeline_parallel_size != parallel_size()) {
    return fail("this job has " + std::to_string(parallel_size()) +
                " ranks: pass --tensor-parallel-size " + std::to_string(parallel_size()) +
                " (or --pipeline-parallel-size " + std::to_string(parallel_size()) + ")");
  }
  if (parallel_rank() == 0) return std::nullopt;
  Status s = run_parallel_worker(config);
  if (!s.ok()) return fail(s.message());
  return 0;
}

std::string default_model_path() {
  // Installed next to the binary's source tree: <root>/build/bin/pagoda -> <root>/models.
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    candidates.push_back(exe.parent_path() / "../../models/demo.gguf");
    candidates.push_back(exe.parent_path() / "../share/pagoda/demo.gguf");
  }
  candidates.push_back("models/demo.gguf");
  for (const auto& p : candidates) {
    if (std::filesystem::exists(p, ec)) return std::filesystem::weakly_canonical(p, ec).string();
  }
  return "";
}

}  // namespace pagoda::cli

int main(int argc, char** argv) {
  using namespace pagoda::cli;
  pagoda::init_logging(spdlog::level::warn);
  CLI::App app{"pagoda: an LLM inference engine and OpenAI-compatible server"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");
  CommandAction action;
  for (RegisterCommand reg : all_commands())
    reg(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return fail(e.what());
  }
  if (!action) return fail("no command given (see pagoda --help)");
  int code = 0;
  try {
    code = action();
  } catch (const std::exception& e) {
    code = fail(e.what());
  }
  // Under mpirun: a failed rank ends the whole job, a finished one leaves MPI cleanly.
  return pagoda::finish_parallel(code);
}
