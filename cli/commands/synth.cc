// `pagoda synth --shape NAME --vocab VOCAB.gguf -o OUT.gguf [--type F16] [--seed S] [--layers N]`:
// writes a model with deterministic random weights at a real model's shapes (convert/shapes/) and
// the tokenizer of VOCAB.gguf, for benchmarks and tests without downloading weights. Streams the
// weights, so a 2 GB model needs only a few MB of memory.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "convert/shapes/model_shape.h"
#include "convert/shapes/synth_model.h"
#include "format/gguf_file.h"

namespace pagoda::cli {
namespace {

struct SynthArgs {
  std::string shape;
  std::string vocab;
  std::string output;
  std::string type = "F16";
  uint64_t seed = 0;
  int32_t layers = 0;
  int threads = 0;
};

int run_synth(const SynthArgs& args) {
  const convert::ModelShape* shape = convert::find_model_shape(args.shape);
  if (shape == nullptr) {
    return fail(
        fmt::format("unknown shape '{}' (known: {})", args.shape, convert::model_shape_names()));
  }
  const auto dtype = tensor::dtype_from_name(args.type);
  if (!dtype || (*dtype != tensor::DType::kF32 && *dtype != tensor::DType::kF16 &&
                 *dtype != tensor::DType::kBF16)) {
    return fail(fmt::format("unknown --type '{}' (synth writes F32, F16 or BF16)", args.type));
  }
  if (args.layers < 0 || args.threads < 0) return fail("--layers and --threads must be >= 0");
  auto vocab = format::GgufFile::open(args.vocab);
  if (!vocab.ok()) return fail(vocab.status().message());

  convert::SynthOptions options;
  options.dtype = *dtype;
  options.seed = args.seed;
  options.num_layers = args.layers;
  options.num_threads = args.threads;
  ProgressBar bar("synth");
  auto writer = convert::build_synth_model(
      *shape, **vocab, options, [&bar](size_t index, size_t num, uint64_t done, uint64_t total) {
        bar.update(index, num, "", done, total);
      });
  if (!writer.ok()) return fail(writer.status().message());
  const Status st = writer->write_file(args.output);
  bar.finish();
  if (!st.ok()) return fail(st.message());
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(args.output, ec);
  std::printf("wrote %s: %s, %d layers, %s, %zu tensors, %s in %.1f s\n", args.output.c_str(),
              std::string(shape->name).c_str(), args.layers > 0 ? args.layers : shape->num_layers,
              std::string(tensor::dtype_name(*dtype)).c_str(), writer->num_tensors(),
              human_bytes(ec ? 0 : size).c_str(), bar.elapsed_seconds());
  return 0;
}

}  // namespace

void register_synth(CLI::App& app, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write a model with random weights at a real model's shapes (for benchmarks)");
  auto args = std::make_shared<SynthArgs>();
  cmd->add_option("--shape", args->shape, "Model shape: " + convert::model_shape_names())
      ->required();
  cmd->add_option("--vocab", args->vocab, "GGUF file whose tokenizer.* metadata is copied")
      ->required();
  cmd->add_option("-o,--output", args->output, "Output GGUF file")->required();
  cmd->add_option("--type", args->type, "Weight type: F32, F16 or BF16")->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random seed")->capture_default_str();
  cmd->add_option("--layers", args->layers, "Number of layers (default: the shape's)");
  cmd->add_option("--threads", args->threads, "Threads (default: all)");
  cmd->callback([&action, args] { action = [args] { return run_synth(*args); }; });
}

}  // namespace pagoda::cli
