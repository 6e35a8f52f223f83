// `pagoda inspect` and `pagoda logits` on the models/arch fixtures (phi3, gemma2, qwen2moe,
// deepseek2): inspect names the architecture; logits tokenizes the reference prompt as the
// peer did and its first greedy token and first row's top token are the peer's.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "test_support.h"
#include "tools_test_support.h"

namespace pagoda {
namespace {

class ArchCliTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(testing::pagoda_binary())) << testing::pagoda_binary();
    PAGODA_REQUIRE_FIXTURE(model());
  }
  std::filesystem::path model() const {
    return testing::fixture("models/arch/" + GetParam() + "-Q8_0.gguf");
  }
};

TEST_P(ArchCliTest, InspectAndLogits) {
  const testing::CliResult inspect = testing::run_pagoda({"inspect", model().string()});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("\"" + GetParam() + "\""), std::string::npos) << inspect.out;

  std::ifstream in(testing::fixture("models/arch/reference/" + GetParam() + "-Q8_0.p1.json"));
  const nlohmann::json ref = nlohmann::json::parse(in);
  const testing::CliResult logits =
      testing::run_pagoda({"logits", "-m", model().string(), "-p", ref["prompt"].get<std::string>(),
                           "-n", "1", "--top", "4"});
  ASSERT_EQ(logits.exit_code, 0) << logits.err;
  const nlohmann::json ours = nlohmann::json::parse(logits.out);
  EXPECT_EQ(ours["prompt_tokens"], ref["prompt_tokens"]);
  ASSERT_EQ(ours["greedy_tokens"].size(), 1u);
  EXPECT_EQ(ours["greedy_tokens"][0], ref["greedy_tokens"][0]);
  EXPECT_EQ(ours["positions"][0]["top"][0][0], ref["positions"][0]["top"][0][0]);
}

INSTANTIATE_TEST_SUITE_P(Archs, ArchCliTest,
                         ::testing::Values("phi3", "gemma2", "qwen2moe", "deepseek2"));

}  // namespace
}  // namespace pagoda
