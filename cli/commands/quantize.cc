// `pagoda quantize IN.gguf OUT.gguf TYPE [--threads N]`: re-encodes a model's weights to TYPE
// (Q4_0 ... Q8_0, the K-quant mixes Q2_K ... Q6_K, or F16/BF16/F32) with llama.cpp's tensor-type
// choices (convert/quantize/quant_mix.h), streaming from the input mapping to the output file.
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "convert/quantize/model_quantizer.h"
#include "format/gguf_file.h"
#include "format/imatrix_file.h"

namespace pagoda::cli {
namespace {

struct QuantizeArgs {
  std::string input;
  std::string output;
  std::string type;
  std::string imatrix;
  int threads = 0;
};

int run_quantize(const QuantizeArgs& args) {
  const auto file_type = convert::file_type_from_name(args.type);
  if (!file_type) {
    return fail(fmt::format("unknown quantization type '{}' (known: {})", args.type,
                            convert::file_type_names()));
  }
  if (args.threads < 0) return fail("--threads must be >= 0");
  auto in = format::GgufFile::open(args.input);
  if (!in.ok()) return fail(in.status().message());

  format::Imatrix imatrix;
  convert::QuantizeOptions options;
  if (!args.imatrix.empty()) {
    auto m = format::read_imatrix(args.imatrix);
    if (!m.ok()) return fail(m.status().message());
    imatrix = std::move(m).value();
    options.imatrix = &imatrix;
  }
  options.file_type = *file_type;
  options.num_threads = args.threads;
  ProgressBar bar("quantize");
  auto q =
      convert::build_quantized_model(**in, options, [&bar](const convert::QuantizeProgress& p) {
        bar.update(p.tensor_index, p.num_tensors, p.tensor_name, p.in_bytes_done, p.in_bytes_total);
      });
  if (!q.ok()) return fail(fmt::format("{}: {}", args.input, q.status().message()));
  const Status st = q->writer.write_file(args.output);
  bar.finish();
  if (!st.ok()) return fail(st.message());
  size_t quantized = 0, fallback = 0;
  for (const convert::TensorPlan& p : q->plans) {
    quantized += p.quantize ? 1 : 0;
    fallback += p.fallback ? 1 : 0;
  }
  std::printf(
      "wrote %s: %s, %zu tensors (%zu re-encoded, %zu with imatrix weights, %zu with a fallback "
      "type), %s -> %s in %.1f s\n",
      args.output.c_str(), std::string(convert::file_type_name(*file_type)).c_str(),
      q->plans.size(), quantized, q->num_weighted, fallback, human_bytes(q->in_bytes).c_str(),
      human_bytes(q->out_bytes).c_str(), bar.elapsed_seconds());
  return 0;
}

}  // namespace

void register_quantize(CLI::App& app, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand("quantize", "Quantize a GGUF model (llama.cpp's type mixes)");
  auto args = std::make_shared<QuantizeArgs>();
  cmd->add_option("input", args->input, "Input GGUF model")->required();
  cmd->add_option("output", args->output, "Output GGUF file")->required();
  cmd->add_option("type", args->type, "Target: " + convert::file_type_names())->required();
  cmd->add_option("--threads", args->threads, "Threads (default: all)");
  cmd->add_option("--imatrix", args->imatrix,
                  "Importance matrix (pagoda imatrix / llama-imatrix .dat): weighted scale search "
                  "for Q4_0, Q4_K and Q6_K tensors");
  cmd->callback([&action, args] { action = [args] { return run_quantize(*args); }; });
}

}  // namespace pagoda::cli
