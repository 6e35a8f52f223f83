// `pagoda quantize IN.gguf OUT.gguf TYPE [--threads N] [--imatrix FILE]
//  [--calibration TEXT --method rtn|gptq|awq [--act-order] [--calib-ctx N] [--calib-chunks N]
//  [--no-awq-clip]] [--token-embedding-type TYPE]`:
// re-encodes a model's weights to TYPE (Q4_0 ... Q8_0, the K-quant mixes Q2_K ... Q6_K, or
// F16/BF16/F32) with llama.cpp's tensor-type choices (convert/quantize/quant_mix.h), streaming
// from the input mapping to the output file; with --method gptq|awq the layers' matrices are
// first chosen from their activations on the calibration text (calibrated_quantizer.h).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "convert/quantize/model_quantizer.h"
#include "format/gguf_file.h"
#include "format/imatrix_file.h"
#include "kernels/quant.h"
#include "loader/model_loader.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {
namespace {

struct QuantizeArgs {
  std::string input;
  std::string output;
  std::string type;
  std::string imatrix;
  std::string calibration;
  std::string method = "rtn";
  bool act_order = false;
  std::string gptq_scales = "static";
  int32_t calib_ctx = 512;
  int32_t calib_chunks = 0;
  double damp = 0.01;
  bool no_awq_clip = false;
  std::string token_embedding_type;
  int threads = 0;
};

// Runs GPTQ/AWQ over the calibration text; the result must outlive the write.
Result<convert::CalibrationResult> run_calibration(const QuantizeArgs& args,
                                                   std::shared_ptr<const format::GgufFile> in,
                                                   const convert::QuantizeOptions& options) {
  std::ifstream f(args.calibration, std::ios::binary);
  if (!f) return io_error("cannot read --calibration {}", args.calibration);
  std::ostringstream text;
  text << f.rdbuf();
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<tokenizer::Tokenizer> tok,
                          loader::load_tokenizer(args.input));
  tokenizer::EncodeOptions enc;
  enc.add_special = true;
  enc.parse_special = false;  // the text is data, as for perplexity
  const std::vector<int32_t> tokens = tok->encode(text.str(), enc);
  convert::CalibrationOptions c;
  c.method = args.method == "gptq"  ? convert::CalibrationMethod::kGptq
             : args.method == "awq" ? convert::CalibrationMethod::kAwq
                                    : convert::CalibrationMethod::kAwqGptq;
  c.gptq.act_order = args.act_order;
  c.gptq.running_grid = args.gptq_scales == "running";
  c.gptq.damp = args.damp;
  c.awq_clip = !args.no_awq_clip;
  c.n_ctx = args.calib_ctx;
  c.max_windows = args.calib_chunks;
  if (tok->vocab().add_bos && tok->vocab().bos_id) c.bos_id = *tok->vocab().bos_id;
  c.imatrix = options.imatrix;
  PAGODA_ASSIGN_OR_RETURN(
      std::vector<convert::TensorPlan> plans,
      convert::plan_types_for(*in, options.file_type, options.token_embedding_type));
  ProgressBar bar(args.method, "stages");
  auto result =
      convert::calibrate(in, plans, tokens, c, [&bar](const convert::CalibrationProgress& p) {
        // Stages finished so far; the note says where the current stage is ("forward 3/8").
        bar.update_count(static_cast<uint64_t>(p.stage), static_cast<uint64_t>(p.num_stages),
                         fmt::format("{} {}/{}", p.what, p.done, p.total));
      });
  bar.finish();
  if (!result.ok()) return result.status();
  double rtn = 0, calibrated = 0;
  for (const convert::CalibrationRecord& r : result->records) {
    rtn += r.error_rtn;
    calibrated += r.error;
  }
  std::printf(
      "%s: %zu matrices (or AWQ groups) over %zu calibration tokens in %.1f s; layer-output "
      "error on the calibration inputs %.4g (round-to-nearest %.4g, ratio %.3f)\n",
      args.method.c_str(), result->records.size(), result->num_tokens, bar.elapsed_seconds(),
      calibrated, rtn, rtn > 0 ? calibrated / rtn : 1.0);
  return result;
}

int run_quantize(const QuantizeArgs& args) {
  const auto file_type = convert::file_type_from_name(args.type);
  if (!file_type) {
    return fail(fmt::format("unknown quantization type '{}' (known: {})", args.type,
                            convert::file_type_names()));
  }
  if (args.threads < 0) return fail("--threads must be >= 0");
  if (args.method != "rtn" && args.method != "gptq" && args.method != "awq" &&
      args.method != "awq-gptq")
    return fail(
        fmt::format("unknown --method '{}' (known: rtn, gptq, awq, awq-gptq)", args.method));
  if (args.method != "rtn" && args.calibration.empty())
    return fail(fmt::format("--method {} needs --calibration TEXT_FILE", args.method));
  if (args.method == "rtn" && !args.calibration.empty())
    return fail("--calibration is used by --method gptq or awq only");
  if (args.act_order && args.method != "gptq") return fail("--act-order is a --method gptq option");
  if (args.no_awq_clip && args.method != "awq")
    return fail("--no-awq-clip is a --method awq option");
  std::optional<tensor::DType> token_embedding_type;
  if (!args.token_embedding_type.empty()) {
    token_embedding_type = tensor::dtype_from_name(args.token_embedding_type);
    if (!token_embedding_type || !kernels::can_quantize(*token_embedding_type)) {
      return fail(
          fmt::format("unknown --token-embedding-type '{}' (known: F32, F16, BF16, Q4_0, "
                      "Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)",
                      args.token_embedding_type));
    }
  }
  if (args.gptq_scales != "running" && args.gptq_scales != "static")
    return fail(
        fmt::format("unknown --gptq-scales '{}' (known: running, static)", args.gptq_scales));
  auto opened = format::GgufFile::open(args.input);
  if (!opened.ok()) return fail(opened.status().message());
  std::shared_ptr<const format::GgufFile> in(std::move(opened).value());

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
  options.token_embedding_type = token_embedding_type;
  convert::CalibrationResult calibrated;
  if (args.method != "rtn") {
    auto c = run_calibration(args, in, options);
    if (!c.ok()) return fail(fmt::format("{}: {}", args.input, c.status().message()));
    calibrated = std::move(c).value();
    options.calibrated = &calibrated.tensors;
  }
  ProgressBar bar("quantize");
  auto q = convert::build_quantized_model(*in, options, [&bar](const convert::QuantizeProgress& p) {
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
      "type, %zu calibrated), %s -> %s in %.1f s\n",
      args.output.c_str(), std::string(convert::file_type_name(*file_type)).c_str(),
      q->plans.size(), quantized, q->num_weighted, fallback, q->num_calibrated,
      human_bytes(q->in_bytes).c_str(), human_bytes(q->out_bytes).c_str(), bar.elapsed_seconds());
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
                  "for Q4_0, Q4_K and Q6_K tensors (with --method gptq: the grid's scales)");
  cmd->add_option("--calibration", args->calibration,
                  "Calibration text for --method gptq|awq (plain text, tokenized as perplexity)");
  cmd->add_option("--method", args->method,
                  "rtn (round to nearest, default) | gptq (Hessian error compensation on the "
                  "type's grid) | awq (activation-aware channel scales folded into the norms, "
                  "then weight clipping) | awq-gptq (AWQ's scales and clipping, then GPTQ)");
  cmd->add_flag("--act-order", args->act_order,
                "GPTQ: quantise columns by decreasing Hessian diagonal (order only: GGUF has no "
                "permutation)");
  cmd->add_option("--gptq-scales", args->gptq_scales,
                  "GPTQ block scales: static (from the original weights or --imatrix, default) | "
                  "running (chosen from the error-compensated weights when a block is reached; "
                  "static with --act-order)");
  cmd->add_option("--calib-ctx", args->calib_ctx, "Calibration window in tokens (default 512)")
      ->check(CLI::Range(4, 1 << 20));
  cmd->add_option("--calib-chunks", args->calib_chunks,
                  "At most this many calibration windows (default: all)")
      ->check(CLI::Range(0, 1 << 24));
  cmd->add_flag("--no-awq-clip", args->no_awq_clip,
                "AWQ: skip llm-awq's weight clipping search (on by default)");
  cmd->add_option("--token-embedding-type", args->token_embedding_type,
                  "Type of token_embd.weight (as llama-quantize's option), e.g. Q8_0; default: the "
                  "mix's");
  cmd->add_option("--damp", args->damp,
                  "GPTQ damping, a fraction of the mean Hessian diagonal "
                  "(default 0.01)")
      ->check(CLI::Range(0.0, 10.0));
  cmd->callback([&action, args] { action = [args] { return run_quantize(*args); }; });
}

}  // namespace pagoda::cli
