// `pagoda convert HF_DIR OUT.gguf [--type F16|BF16|F32|Q8_0|Q4_K_M|...] [--threads N]`: writes a
// Hugging Face model directory as a GGUF file (convert/hf_to_gguf.h: llama.cpp's layout, q/k
// permuted for llama, experts stacked, the tokenizer and chat template in the metadata), with
// llama.cpp's tensor-type mix for quantised types, streaming from the safetensors mappings.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "convert/hf_to_gguf.h"
#include "loader/hf/hf_checkpoint.h"
#include "loader/hf/hf_tokenizer_files.h"

namespace pagoda::cli {
namespace {

struct ConvertArgs {
  std::string input;
  std::string output;
  std::string type = "F16";
  int threads = 0;
};

int run_convert(const ConvertArgs& args) {
  const auto file_type = convert::file_type_from_name(args.type);
  if (!file_type) {
    return fail(
        fmt::format("unknown type '{}' (known: {})", args.type, convert::file_type_names()));
  }
  if (args.threads < 0) return fail("--threads must be >= 0");
  if (!loader::HfCheckpoint::is_model_dir(args.input)) {
    return fail(args.input + ": not a Hugging Face model directory (no config.json)");
  }
  auto opened = loader::HfCheckpoint::open(args.input);
  if (!opened.ok()) return fail(opened.status().message());
  std::shared_ptr<const loader::HfCheckpoint> checkpoint(std::move(opened).value());
  auto tok = loader::load_hf_tokenizer(args.input);
  if (!tok.ok()) return fail(tok.status().message());

  convert::ConvertOptions options;
  options.file_type = *file_type;
  options.num_threads = args.threads;
  ProgressBar bar("convert");
  auto q = convert::build_gguf_from_hf(
      checkpoint, *tok, options, [&bar](const convert::QuantizeProgress& p) {
        bar.update(p.tensor_index, p.num_tensors, p.tensor_name, p.in_bytes_done, p.in_bytes_total);
      });
  if (!q.ok()) return fail(fmt::format("{}: {}", args.input, q.status().message()));
  const Status st = q->writer.write_file(args.output);
  bar.finish();
  if (!st.ok()) return fail(st.message());
  std::printf("wrote %s: %s %s, %zu tensors, %s -> %s in %.1f s\n", args.output.c_str(),
              checkpoint->architecture().c_str(),
              std::string(convert::file_type_name(*file_type)).c_str(), q->plans.size(),
              human_bytes(q->in_bytes).c_str(), human_bytes(q->out_bytes).c_str(),
              bar.elapsed_seconds());
  return 0;
}

}  // namespace

void register_convert(CLI::App& app, CommandAction& action) {
  CLI::App* cmd =
      app.add_subcommand("convert", "Convert a Hugging Face model directory to a GGUF file");
  auto args = std::make_shared<ConvertArgs>();
  cmd->add_option("input", args->input,
                  "Model directory (config.json, *.safetensors, "
                  "tokenizer.json)")
      ->required();
  cmd->add_option("output", args->output, "Output GGUF file")->required();
  cmd->add_option("--type", args->type, "Tensor type: " + convert::file_type_names())
      ->capture_default_str();
  cmd->add_option("--threads", args->threads, "Threads (default: all)");
  cmd->callback([&action, args] { action = [args] { return run_convert(*args); }; });
}

}  // namespace pagoda::cli
