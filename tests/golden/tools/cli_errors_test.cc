// Error paths of `pagoda synth` and `pagoda quantize`: one line on stderr starting "pagoda: ",
// exit code 1, and no output file left behind.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;
using testing::run_pagoda;

void expect_one_line_error(const testing::CliResult& r, const std::string& mention) {
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("pagoda: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(mention), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

class CliErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(testing::pagoda_binary())) << testing::pagoda_binary();
  }
  fs::path out_ = testing::scratch_dir() / "never-written.gguf";
  void TearDown() override {
    EXPECT_FALSE(fs::exists(out_));
    EXPECT_FALSE(fs::exists(out_.string() + ".tmp"));
  }
};

TEST_F(CliErrorsTest, QuantizeMissingInput) {
  const std::string missing = (testing::scratch_dir() / "no-such-model.gguf").string();
  expect_one_line_error(run_pagoda({"quantize", missing, out_.string(), "Q4_0"}), "no-such-model");
}

TEST_F(CliErrorsTest, QuantizeUnknownType) {
  const fs::path f16 = testing::fixture("models/llama-F16.gguf");
  PAGODA_REQUIRE_FIXTURE(f16);
  expect_one_line_error(run_pagoda({"quantize", f16.string(), out_.string(), "Q7_X"}), "Q7_X");
}

TEST_F(CliErrorsTest, QuantizeNotAGgufFile) {
  const fs::path text = testing::fixture("tokenizer/ggml-vocab-llama-spm.gguf.inp");
  PAGODA_REQUIRE_FIXTURE(text);
  expect_one_line_error(run_pagoda({"quantize", text.string(), out_.string(), "Q8_0"}), "GGUF");
}

TEST_F(CliErrorsTest, QuantizeOutputFolderMissing) {
  const fs::path f16 = testing::fixture("models/llama-F16.gguf");
  PAGODA_REQUIRE_FIXTURE(f16);
  const std::string bad = (testing::scratch_dir() / "no-such-dir" / "out.gguf").string();
  expect_one_line_error(run_pagoda({"quantize", f16.string(), bad, "Q8_0"}), "no-such-dir");
}

TEST_F(CliErrorsTest, QuantizeMissingArguments) {
  const auto r = run_pagoda({"quantize", "only-one.gguf"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("pagoda: ", 0), 0u) << r.err;
}

TEST_F(CliErrorsTest, SynthUnknownShape) {
  const fs::path vocab = testing::fixture("tokenizer/ggml-vocab-llama-spm.gguf");
  expect_one_line_error(
      run_pagoda({"synth", "--shape", "gpt-9", "--vocab", vocab.string(), "-o", out_.string()}),
      "gpt-9");
}

TEST_F(CliErrorsTest, SynthUnknownType) {
  const fs::path vocab = testing::fixture("tokenizer/ggml-vocab-llama-spm.gguf");
  expect_one_line_error(run_pagoda({"synth", "--shape", "tiny", "--vocab", vocab.string(), "--type",
                                    "Q4_0", "-o", out_.string()}),
                        "Q4_0");
}

TEST_F(CliErrorsTest, SynthMissingVocab) {
  expect_one_line_error(run_pagoda({"synth", "--shape", "tiny", "--vocab", "/nonexistent/v.gguf",
                                    "-o", out_.string()}),
                        "/nonexistent/v.gguf");
}

}  // namespace
}  // namespace pagoda
