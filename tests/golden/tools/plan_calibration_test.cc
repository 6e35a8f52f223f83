// `pagoda plan --hardware cpu` against the project's own benchmarks on this machine: a 4-layer
// TinyLlama-shape model (pagoda synth + quantize Q4_0), the cpu probe written by
// `pagoda plan --calibrate -m` (with the model's own weight shapes), then `pagoda bench` (prefill
// and single-sequence decode tok/s) and `pagoda bench engine --concurrency 16` (output tok/s)
// compared with the plan's "file" row. The tolerance is +-25%; the errors are printed
// either way. Speed on a shared machine is noisy, so this runs under the labels slow and bench,
// not in the default suite (bench/planner/calibrate.sh prints the same comparison, and bench
// serve's, as a table).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

using nlohmann::json;

json run_json(const std::vector<std::string>& args) {
  const testing::CliResult r = testing::run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out, nullptr, /*allow_exceptions=*/false);
}

const json& file_row(const json& plan) {
  for (const json& r : plan["plans"]) {
    if (r["quant"] == "file") return r;
  }
  static const json kNone;
  ADD_FAILURE() << "no file row";
  return kNone;
}

double error_of(double predicted, double measured) {
  return predicted / measured - 1;
}

TEST(PlanCalibration, CpuPredictionsWithinQuarterOfBench) {
  const std::string vocab = testing::fixture("tokenizer/ggml-vocab-llama-spm.gguf").string();
  PAGODA_REQUIRE_FIXTURE(vocab);
  const auto dir = testing::scratch_dir();
  const std::string f16 = (dir / "tl4-f16.gguf").string(), q4 = (dir / "tl4-q4_0.gguf").string();
  const std::string calib = (dir / "cpu.json").string();
  ASSERT_EQ(testing::run_pagoda({"synth", "--shape", "tinyllama-1.1b", "--layers", "4", "--vocab",
                                 vocab, "--type", "F16", "-o", f16})
                .exit_code,
            0);
  ASSERT_EQ(testing::run_pagoda({"quantize", f16, q4, "Q4_0"}).exit_code, 0);
  ASSERT_EQ(testing::run_pagoda({"plan", "--calibrate", calib, "-m", q4}).exit_code, 0);

  const json bench = run_json(
      {"bench", "-m", q4, "-p", "256", "-n", "32", "--batch", "1", "--repeats", "3", "--json"});
  const json plan = run_json({"plan", "-m", q4, "--hardware", "cpu", "--calibration", calib,
                              "--input-len", "256", "--output-len", "32", "--json"});
  const double prefill_err = error_of(file_row(plan)["prefill_tokens_per_s"].get<double>(),
                                      bench["prefill"]["tokens_per_second"].get<double>());
  const double decode_err = error_of(file_row(plan)["decode_tokens_per_s"].get<double>(),
                                     bench["decode"]["tokens_per_second"].get<double>());

  const json engine =
      run_json({"bench", "engine", "-m", q4, "--num-requests", "32", "--concurrency", "16",
                "--input-len", "64", "--output-len", "32", "--json"});
  const json plan16 =
      run_json({"plan", "-m", q4, "--hardware", "cpu", "--calibration", calib, "--input-len", "64",
                "--output-len", "32", "--clients", "16", "--json"});
  const double serve_err = error_of(file_row(plan16)["clients_output_tokens_per_s"].get<double>(),
                                    engine["output_tokens_per_s"].get<double>());
  std::printf("plan vs bench: prefill %+.0f%%, decode %+.0f%%, 16 clients %+.0f%%\n",
              100 * prefill_err, 100 * decode_err, 100 * serve_err);
  EXPECT_LE(std::abs(prefill_err), 0.25);
  EXPECT_LE(std::abs(decode_err), 0.25);
  EXPECT_LE(std::abs(serve_err), 0.25);
}

}  // namespace
}  // namespace pagoda
