// `pagoda imatrix -m MODEL -f TEXT -o FILE [--ctx N] [--chunks N]`: the importance matrix of
// llama-imatrix (mean squared input activation per column of every weight, over the calibration
// text in windows of N tokens), written in llama.cpp's legacy .dat format (format/imatrix_file.h)
// for `pagoda quantize --imatrix` (or llama-quantize).
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "diagnostics/activation_stats.h"
#include "diagnostics/perplexity.h"
#include "format/imatrix_file.h"
#include "loader/model_loader.h"

namespace pagoda::cli {
namespace {

struct ImatrixArgs {
  std::string model, text_file, output = "imatrix.dat";
  int32_t ctx = 512, chunks = 0;
};

int run_imatrix(const ImatrixArgs& args) {
  const std::string path = args.model.empty() ? default_model_path() : args.model;
  if (path.empty()) return fail("no model given (-m) and no bundled model found");
  std::ifstream in(args.text_file, std::ios::binary);
  if (!in) return fail(fmt::format("cannot read {}", args.text_file));
  std::ostringstream text;
  text << in.rdbuf();
  auto loaded = loader::load_model(path);
  if (!loaded.ok()) return fail(loaded.status().message());
  loaded->model->set_served_context(args.ctx);  // LongRoPE: the window's table, as llama.cpp
  const std::vector<int32_t> tokens = diagnostics::tokenize_for_perplexity(*loaded, text.str());
  diagnostics::ActivationStats stats;
  ProgressBar bar("imatrix", "windows");
  const Status st = diagnostics::collect_activations(
      *loaded, tokens, args.ctx, args.chunks, stats,
      [&bar](size_t done, size_t total) { bar.update_count(done, total); });
  bar.finish();
  if (!st.ok()) return fail(st.message());
  const format::Imatrix m = stats.to_imatrix(args.text_file);
  const Status w = format::write_imatrix(args.output, m);
  if (!w.ok()) return fail(w.message());
  std::printf("wrote %s: %zu weights, %d windows of %d tokens, %.1f s\n", args.output.c_str(),
              m.entries.size(), m.last_call, args.ctx, bar.elapsed_seconds());
  return 0;
}

}  // namespace

void register_imatrix(CLI::App& app, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand(
      "imatrix", "Importance matrix of a model over a calibration text (llama.cpp .dat)");
  auto args = std::make_shared<ImatrixArgs>();
  cmd->add_option("-m,--model", args->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-f,--file", args->text_file, "Calibration text file")->required();
  cmd->add_option("-o,--output", args->output, "Output file (default imatrix.dat)");
  cmd->add_option("-c,--ctx", args->ctx, "Window length in tokens (default 512)")
      ->check(CLI::Range(4, 1 << 24));
  cmd->add_option("--chunks", args->chunks, "At most this many windows (default: all)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->callback([&action, args] { action = [args] { return run_imatrix(*args); }; });
}

}  // namespace pagoda::cli
