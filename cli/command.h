// The `pagoda` binary's subcommands. Each lives in its own commands/<name>.cc and registers
// itself with CLI11; main.cc lists them. A command's action returns the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

#include "pagoda/engine.h"

namespace pagoda::cli {

using CommandAction = std::function<int()>;

// Adds one subcommand to `app`; when it is selected, `action` is set to run it.
using RegisterCommand = void (*)(CLI::App& app, CommandAction& action);

// Prints "pagoda: <message>" to stderr as one line and returns exit code 1.
int fail(const std::string& message);

// The default model bundled with the repository (models/demo.gguf), or "" if absent.
std::string default_model_path();

// `--flash-attn`, as llama.cpp's: attention with the online softmax (kernels/attention.h).
void add_flash_attn_flag(CLI::App* cmd, bool& flash_attention);

// Speculative decoding: --speculative-ngram, --speculative-model, --ngram-min/max,
// --num-speculative-tokens,
// --speculative-disable-batch-tokens, --no-speculative-adaptive (EngineConfig::speculative).
void add_speculative_options(CLI::App* cmd, SpeculativeConfig& spec);

// `--tensor-parallel-size N`: split the model across the N ranks of `mpirun -np N pagoda ...`
// (pagoda/parallel.h).
void add_tensor_parallel_option(CLI::App* cmd, int32_t& tensor_parallel_size);
// --expert-parallel (EngineConfig::expert_parallel).
void add_expert_parallel_flag(CLI::App* cmd, bool& expert_parallel);
// `--pipeline-parallel-size N`: the layers in N stages, one per rank.
void add_pipeline_parallel_option(CLI::App* cmd, int32_t& pipeline_parallel_size);

// On a rank other than 0 of an mpirun job: runs this rank's shard of `config`'s model as a
// worker and returns the exit code; on rank 0 (or outside a job): nullopt, go on as the engine.
std::optional<int> run_as_parallel_worker(const EngineConfig& config);

}  // namespace pagoda::cli
