// `pagoda quantize --calibration TEXT --method gptq|awq|awq-gptq` on the bundled (trained) demo
// model: the file is a standard GGUF with exactly the tensor types of the round-to-nearest mix,
// loads, generates, stays close to the F16 model's logits, and the calibrated layers' output error
// on the calibration inputs (printed by the command) is below round-to-nearest's. Bad option
// combinations are refused with messages naming the option.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <string>

#include "format/gguf_file.h"
#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using testing::run_pagoda;
using testing::scratch_dir;

constexpr const char* kText =
    "Once upon a time, there was a little girl named Lily. She liked to play in the park with "
    "her red ball. One day, the ball rolled into the pond. Lily was sad. A kind duck pushed the "
    "ball back to her, and Lily said thank you. The next day, Tom and his dog Max went to the "
    "beach. They built a big sand castle and found a shiny shell. Max barked at the waves. ";

std::string demo_model() {
  return (fs::path(PAGODA_SOURCE_DIR) / "models" / "demo.gguf").string();
}

std::string calibration_text() {
  const fs::path p = scratch_dir() / "calib.txt";
  if (!fs::exists(p)) {
    std::ofstream f(p);
    for (int i = 0; i < 6; ++i)
      f << kText;
  }
  return p.string();
}

struct Quantized {
  std::string path;
  double ratio = NAN;  // calibrated / RTN layer-output error, as printed
};

Quantized quantize(const std::string& type, const std::string& tag,
                   const std::vector<std::string>& extra) {
  Quantized q;
  q.path = (scratch_dir() / ("demo-" + type + "-" + tag + ".gguf")).string();
  std::vector<std::string> args = {"quantize", demo_model(), q.path, type};
  args.insert(args.end(), extra.begin(), extra.end());
  const auto r = run_pagoda(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  if (std::regex_search(r.out, m, std::regex(R"(ratio ([0-9.]+))"))) q.ratio = std::stod(m[1]);
  return q;
}

std::vector<std::string> calibrated(const std::string& method) {
  return {"--calibration",  calibration_text(),
          "--method",       method,
          "--calib-ctx",    "64",
          "--calib-chunks", "2"};
}

TEST(CalibratedQuantize, GptqAndAwqWriteStandardFilesThatLoadAndGenerate) {
  ASSERT_TRUE(fs::exists(testing::pagoda_binary())) << testing::pagoda_binary();
  auto ref = testing::prompt_logits(demo_model());
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  // Q4_0 (with the output in Q6_K) with both methods; the other grids are unit-tested
  // (convert_test Calibrated.*) and Q4_K_M/Q8_0 are in the README's table.
  for (const std::string type : {"Q4_0"}) {
    const Quantized rtn = quantize(type, "rtn", {});
    auto rtn_file = format::GgufFile::open(rtn.path);
    ASSERT_TRUE(rtn_file.ok()) << rtn_file.status().to_string();
    auto rtn_logits = testing::prompt_logits(rtn.path);
    ASSERT_TRUE(rtn_logits.ok());
    const double rtn_err = testing::relative_logit_error(*ref, *rtn_logits);
    for (const std::string method : {"gptq", "awq", "awq-gptq"}) {
      SCOPED_TRACE(type + " " + method);
      const Quantized q = quantize(type, method, calibrated(method));
      // On the calibration inputs the method never does worse than RTN (AWQ's α = 0 is RTN and
      // a clipped row is kept only when its error is lower; GPTQ's compensation lowers it),
      // summed over all calibrated matrices.
      ASSERT_FALSE(std::isnan(q.ratio));
      if (method != "awq") {
        EXPECT_LT(q.ratio, 0.9);
      } else {
        EXPECT_LE(q.ratio, 1.0);
      }
      // Standard GGUF: the same tensors with the same types as the RTN file.
      auto file = format::GgufFile::open(q.path);
      ASSERT_TRUE(file.ok()) << file.status().to_string();
      ASSERT_EQ((*file)->tensors().size(), (*rtn_file)->tensors().size());
      for (size_t i = 0; i < (*file)->tensors().size(); ++i) {
        EXPECT_EQ((*file)->tensors()[i].name, (*rtn_file)->tensors()[i].name);
        EXPECT_EQ((*file)->tensors()[i].dtype, (*rtn_file)->tensors()[i].dtype)
            << (*file)->tensors()[i].name;
      }
      // Loads, finite, close to F16 (RTN's error is ~0.05 on this prompt).
      auto logits = testing::prompt_logits(q.path);
      ASSERT_TRUE(logits.ok()) << logits.status().to_string();
      EXPECT_TRUE(testing::all_finite(*logits));
      const double err = testing::relative_logit_error(*ref, *logits);
      std::printf("%s %s: relative logit error %.4f (RTN %.4f), calibration error ratio %.3f\n",
                  type.c_str(), method.c_str(), err, rtn_err, q.ratio);
      EXPECT_LT(err, 2.0 * rtn_err + 0.02);
      // Generates.
      const auto run =
          run_pagoda({"run", "-m", q.path, "-p", "Once upon a time", "-n", "12", "--temp", "0"});
      EXPECT_EQ(run.exit_code, 0) << run.err;
      EXPECT_GT(run.out.size(), std::string("Once upon a time").size()) << run.out;
    }
  }
}

// llama-quantize's --token-embedding-type: only token_embd.weight changes type (and bytes).
TEST(CalibratedQuantize, TokenEmbeddingTypeChangesOnlyTheEmbedding) {
  ASSERT_TRUE(fs::exists(testing::pagoda_binary()));
  const Quantized plain = quantize("Q4_0", "emb-default", {});
  const Quantized q8 = quantize("Q4_0", "emb-q8", {"--token-embedding-type", "Q8_0"});
  auto a = format::GgufFile::open(plain.path);
  auto b = format::GgufFile::open(q8.path);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  bool seen = false;
  for (size_t i = 0; i < (*a)->tensors().size(); ++i) {
    const auto& ta = (*a)->tensors()[i];
    const auto& tb = (*b)->tensors()[i];
    ASSERT_EQ(ta.name, tb.name);
    if (ta.name == "token_embd.weight") {
      seen = true;
      EXPECT_EQ(ta.dtype, tensor::DType::kQ4_0);
      EXPECT_EQ(tb.dtype, tensor::DType::kQ8_0);
      continue;
    }
    EXPECT_EQ(ta.dtype, tb.dtype) << ta.name;
    ASSERT_EQ(ta.size_bytes, tb.size_bytes) << ta.name;
    EXPECT_EQ(std::memcmp(ta.data, tb.data, ta.size_bytes), 0) << ta.name;
  }
  EXPECT_TRUE(seen);
  auto logits = testing::prompt_logits(q8.path);
  ASSERT_TRUE(logits.ok()) << logits.status().to_string();
  EXPECT_TRUE(testing::all_finite(*logits));
}

TEST(CalibratedQuantize, RefusesBadOptions) {
  ASSERT_TRUE(fs::exists(testing::pagoda_binary()));
  const std::string out = (scratch_dir() / "bad.gguf").string();
  struct Case {
    std::vector<std::string> extra;
    std::string message;
  };
  std::vector<Case> cases = {
      {{"--method", "gptq"}, "--calibration"},
      {{"--method", "sparsegpt", "--calibration", calibration_text()}, "--method"},
      {{"--calibration", calibration_text()}, "--calibration"},
      {{"--method", "awq", "--calibration", calibration_text(), "--act-order"}, "--act-order"},
      {{"--method", "gptq", "--calibration", "/nonexistent/calib.txt"}, "calib.txt"},
      {{"--method", "gptq", "--calibration", calibration_text(), "--calib-ctx", "4096"},
       "context length"},
      {{"--method", "gptq", "--calibration", calibration_text(), "--no-awq-clip"}, "--no-awq-clip"},
      {{"--token-embedding-type", "Q9_9"}, "--token-embedding-type"},
  };
  const std::string tiny = (scratch_dir() / "tiny.txt").string();
  std::ofstream(tiny) << "Hi.";
  cases.push_back({{"--method", "gptq", "--calibration", tiny}, "calibration window"});
  for (const Case& c : cases) {
    std::vector<std::string> args = {"quantize", demo_model(), out, "Q4_0"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    const auto r = run_pagoda(args);
    EXPECT_NE(r.exit_code, 0) << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace pagoda
