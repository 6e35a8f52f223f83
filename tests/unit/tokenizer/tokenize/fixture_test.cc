// The judge: llama.cpp's own tokenizer test suites (ggml-vocab-*.gguf.inp/.out, produced by the
// reference implementation) and the prompt tokens of the reference model runs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "test_support.h"
#include "test_vocabs.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::testing {
namespace {

using tokenizer::EncodeOptions;
using tokenizer::TokenId;

// Strings separated by "\n__ggml_vocab_test__\n" (the file ends with a separator).
std::vector<std::string> split_inputs(const std::string& raw) {
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t next = raw.find(sep, pos);
    if (next == std::string::npos) {
      out.push_back(raw.substr(pos));
      break;
    }
    out.push_back(raw.substr(pos, next - pos));
    pos = next + sep.size();
  }
  return out;
}

std::vector<std::string> split_lines(const std::string& raw) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t next = raw.find('\n', pos);
    if (next == std::string::npos) next = raw.size();
    lines.push_back(raw.substr(pos, next - pos));
    pos = next + 1;
  }
  return lines;
}

class VocabFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabFixtureTest, ReproducesEveryLine) {
  const auto gguf = fixture("tokenizer/ggml-vocab-" + GetParam() + ".gguf");
  PAGODA_REQUIRE_FIXTURE(gguf);
  const tokenizer::Tokenizer* tok = load_gguf_tokenizer(gguf);
  ASSERT_NE(tok, nullptr);
  const auto inputs = split_inputs(read_file(gguf.string() + ".inp"));
  const auto lines = split_lines(read_file(gguf.string() + ".out"));
  ASSERT_EQ(inputs.size(), lines.size());
  ASSERT_GT(inputs.size(), 30u);

  EncodeOptions options;
  options.add_special = false;
  options.parse_special = false;
  size_t passed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<TokenId> expected = parse_ids(lines[i]);
    const std::vector<TokenId> got = tok->encode(inputs[i], options);
    EXPECT_EQ(got, expected) << GetParam() << " string " << i << ": '" << inputs[i] << "'";
    if (got == expected) ++passed;
  }
  std::printf("[ fixture  ] %s: %zu/%zu lines\n", GetParam().c_str(), passed, inputs.size());
}

INSTANTIATE_TEST_SUITE_P(Vocabs, VocabFixtureTest,
                         ::testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder",
                                           "falcon"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// models/reference/MODEL.pN.json: prompt_tokens as llama.cpp tokenized the prompt (with BOS).
TEST(ReferencePromptTest, MatchesEveryModel) {
  const auto dir = fixture("models/reference");
  PAGODA_REQUIRE_FIXTURE(dir);
  size_t checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (entry.path().extension() != ".json") continue;
    const std::string model = file.substr(0, file.find(".p"));
    const auto gguf = fixture("models/" + model + ".gguf");
    if (!std::filesystem::exists(gguf)) continue;
    const auto json = nlohmann::json::parse(read_file(entry.path()));
    const std::string prompt = json.at("prompt").get<std::string>();
    const auto expected = json.at("prompt_tokens").get<std::vector<TokenId>>();
    const tokenizer::Tokenizer* tok = load_gguf_tokenizer(gguf);
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->encode(prompt, EncodeOptions{}), expected) << file;
    ++checked;
  }
  EXPECT_EQ(checked, 12u);
}

TEST(ReferencePromptTest, PromptsAreTheDocumentedOnes) {
  const auto p1 = fixture("models/reference/llama-F16.p1.json");
  const auto p2 = fixture("models/reference/qwen2-Q8_0.p2.json");
  PAGODA_REQUIRE_FIXTURE(p1);
  PAGODA_REQUIRE_FIXTURE(p2);
  EXPECT_EQ(nlohmann::json::parse(read_file(p1)).at("prompt").get<std::string>(),
            "Once upon a time, there was a little robot who");
  EXPECT_EQ(nlohmann::json::parse(read_file(p2)).at("prompt").get<std::string>(),
            "def fibonacci(n):\n    return");
}

}  // namespace
}  // namespace pagoda::testing
