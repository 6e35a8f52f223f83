// pagoda: the command-line entry point. Subcommands are registered from commands/*.cc.
#include <cstdio>
#include <filesystem>
#include <string>

#include "base/log.h"
#include "cli/command.h"
#include "cli/commands/commands.h"

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
      "Always draft --num-speculative-tokens (default: k per request from its acceptance)");
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
  try {
    return action();
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
