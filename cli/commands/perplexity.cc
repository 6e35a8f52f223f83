// `pagoda perplexity -m MODEL -f TEXT [--ctx N] [--stride S] [--batch B] [--json]
//  [--save-logits FILE] [--kl-divergence-base FILE]`: perplexity as llama-perplexity computes it
// (diagnostics/perplexity.h), and the KL divergence, top-1 agreement and PPL change of this model
// against a saved run of a base model on the same text (diagnostics/log_prob_file.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>

#include "api/kv_cache_sizing.h"
#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "diagnostics/log_prob.h"
#include "diagnostics/log_prob_file.h"
#include "diagnostics/perplexity.h"
#include "loader/model_loader.h"

namespace pagoda::cli {
namespace {

struct PerplexityArgs {
  std::string model, text_file, save_logits, kl_base, kv_cache_dtype = "f16";
  int32_t ctx = 512, stride = 0, batch = 0;
  bool json = false, flash_attn = false;
};

Result<std::string> read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot read {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The base run must be of the same text, windows and vocabulary.
Status check_base(const diagnostics::LogProbReader& base, const diagnostics::LogProbHeader& want,
                  std::span<const int32_t> tokens, uint64_t num_rows) {
  const diagnostics::LogProbHeader& h = base.header();
  if (h.n_vocab != want.n_vocab) {
    return invalid_argument("base n_vocab {} differs from the model's {}", h.n_vocab, want.n_vocab);
  }
  if (h.n_ctx != want.n_ctx || h.stride != want.stride) {
    return invalid_argument(
        "base was run with --ctx {} --stride {}, this run uses --ctx {} "
        "--stride {}",
        h.n_ctx, h.stride, want.n_ctx, want.stride);
  }
  if (base.num_tokens() != tokens.size()) {
    return invalid_argument("base text has {} tokens, this one {}", base.num_tokens(),
                            tokens.size());
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (base.token(i) != tokens[i]) {
      return invalid_argument("base text differs from this one at token {}", i);
    }
  }
  if (base.num_rows() != num_rows) {
    return invalid_argument("base has {} scored rows, this run scores {}", base.num_rows(),
                            num_rows);
  }
  return Status();
}

int run_perplexity(const PerplexityArgs& args) {
  const std::string path = args.model.empty() ? default_model_path() : args.model;
  if (path.empty()) return fail("no model given (-m) and no bundled model found");
  auto text = read_text(args.text_file);
  if (!text.ok()) return fail(text.status().message());
  auto kv_dtype = api::parse_kv_cache_dtype(args.kv_cache_dtype);
  if (!kv_dtype.ok()) return fail(kv_dtype.status().message());
  auto loaded = loader::load_model(path);
  if (!loaded.ok()) return fail(loaded.status().message());
  loaded->model->set_served_context(args.ctx);  // LongRoPE: the window's table, as llama.cpp
  const std::vector<int32_t> tokens = diagnostics::tokenize_for_perplexity(*loaded, *text);
  auto windows =
      diagnostics::plan_windows(static_cast<int64_t>(tokens.size()), args.ctx, args.stride);
  if (!windows.ok()) return fail(windows.status().message());
  uint64_t num_rows = 0;
  for (const diagnostics::PerplexityWindow& w : *windows)
    num_rows += static_cast<uint64_t>(w.num_scored);
  const auto n_vocab = static_cast<uint32_t>(loaded->model->config().vocab_size);
  const diagnostics::LogProbHeader header{n_vocab, static_cast<uint32_t>(args.ctx),
                                          static_cast<uint32_t>(args.stride)};

  std::optional<diagnostics::LogProbWriter> writer;
  if (!args.save_logits.empty()) {
    auto w = diagnostics::LogProbWriter::create(args.save_logits, header, tokens, num_rows);
    if (!w.ok()) return fail(w.status().message());
    writer.emplace(std::move(w).value());
  }
  std::optional<diagnostics::LogProbReader> base;
  if (!args.kl_base.empty()) {
    auto b = diagnostics::LogProbReader::open(args.kl_base);
    if (!b.ok()) return fail(b.status().message());
    const Status st = check_base(*b, header, tokens, num_rows);
    if (!st.ok()) return fail(fmt::format("{}: {}", args.kl_base, st.message()));
    base.emplace(std::move(b).value());
  }

  diagnostics::PerplexityOptions options;
  options.n_ctx = args.ctx;
  options.stride = args.stride;
  options.n_batch = args.batch;
  options.kv_dtype = *kv_dtype;
  options.flash_attention = args.flash_attn;
  std::vector<float> log_probs(n_vocab), base_log_probs(n_vocab);
  diagnostics::KlAccumulator kl;
  uint64_t row_index = 0;
  auto on_row = [&](std::span<const float> logits, int32_t target) -> Status {
    diagnostics::log_softmax(logits, log_probs);
    if (writer) PAGODA_RETURN_IF_ERROR(writer->add_row(log_probs));
    if (base) {
      base->row(row_index, base_log_probs);
      kl.add(base_log_probs, log_probs, target);
    }
    ++row_index;
    return Status();
  };
  ProgressBar bar("perplexity", "windows");
  auto result = diagnostics::compute_perplexity(
      *loaded, tokens, options, on_row,
      [&bar](size_t done, size_t total) { bar.update_count(done, total); });
  bar.finish();
  if (!result.ok()) return fail(result.status().message());
  if (writer) {
    const Status st = writer->finish();
    if (!st.ok()) return fail(st.message());
  }
  const diagnostics::KlSummary summary = kl.summary();
  if (args.json) {
    nlohmann::json out;
    out["model"] = path;
    out["text_tokens"] = tokens.size();
    out["n_ctx"] = args.ctx;
    out["stride"] = args.stride;
    out["windows"] = windows->size();
    out["scored_tokens"] = result->nll.count;
    out["nll"] = result->nll.sum / static_cast<double>(result->nll.count);
    out["ppl"] = result->nll.ppl();
    out["ppl_error"] = result->nll.ppl_error();
    out["ppl_after_window"] = result->ppl_after_window;
    if (base) {
      out["kl_divergence"] = {{"base", args.kl_base},
                              {"mean", summary.mean},
                              {"median", summary.median},
                              {"p99", summary.p99},
                              {"max", summary.max},
                              {"top1_agreement", summary.top1_agreement},
                              {"base_ppl", summary.base_ppl},
                              {"ppl", summary.ppl},
                              {"delta_ppl", summary.delta_ppl()}};
    }
    std::printf("%s\n", out.dump(1).c_str());
    return 0;
  }
  std::printf("perplexity: %zu tokens, %zu windows of %d, %lld scored\n", tokens.size(),
              windows->size(), args.ctx, static_cast<long long>(result->nll.count));
  for (size_t i = 0; i < result->ppl_after_window.size(); ++i)
    std::printf("[%zu]%.4f%s", i + 1, result->ppl_after_window[i],
                i + 1 < result->ppl_after_window.size() ? "," : "\n");
  std::printf("PPL = %.4f +/- %.5f\n", result->nll.ppl(), result->nll.ppl_error());
  if (base) {
    std::printf("KL divergence vs %s: mean %.6f, median %.6f, p99 %.6f, max %.6f\n",
                args.kl_base.c_str(), summary.mean, summary.median, summary.p99, summary.max);
    std::printf("top-1 agreement %.2f%%; PPL %.4f vs base %.4f (delta %+.4f)\n",
                100.0 * summary.top1_agreement, summary.ppl, summary.base_ppl, summary.delta_ppl());
  }
  return 0;
}

}  // namespace

void register_perplexity(CLI::App& app, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand("perplexity", "Perplexity and KL divergence on a text file");
  auto args = std::make_shared<PerplexityArgs>();
  cmd->add_option("-m,--model", args->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-f,--file", args->text_file, "Text file to score")->required();
  cmd->add_option("-c,--ctx", args->ctx, "Window length in tokens (default 512)")
      ->check(CLI::Range(4, 1 << 24));
  cmd->add_option("--stride", args->stride,
                  "Score the last S tokens of windows every S tokens (llama's --ppl-stride); "
                  "0: second half of non-overlapping windows")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("-b,--batch", args->batch, "Tokens per forward call (default: the window)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_option("--save-logits", args->save_logits,
                  "Write every scored position's log-softmax (f16) for a later "
                  "--kl-divergence-base");
  cmd->add_option("--kl-divergence-base", args->kl_base,
                  "Compare with a --save-logits file of a base model on the same text");
  cmd->add_option("--kv-cache-dtype", args->kv_cache_dtype,
                  "KV cache type: f16 | bf16 | q8_0 | f32");
  cmd->add_flag("--json", args->json, "Print the results as JSON");
  add_flash_attn_flag(cmd, args->flash_attn);
  cmd->callback([&action, args] { action = [args] { return run_perplexity(*args); }; });
}

}  // namespace pagoda::cli
