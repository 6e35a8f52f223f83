// Fidelity against a peer engine: for every ../shared/fixtures/models/reference/*.json (and
// models/arch/reference/*.json: phi3, gemma2, qwen2moe, ... beside their models), our
// logits for the prompt and the greedy continuation must agree with llama.cpp's within the
// issue's tolerances (relative to each row's std), and our argmax must equal the peer's top-1
// wherever its top-1/top-2 gap is not tiny.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "diagnostics/logit_trace.h"
#include "golden/fidelity_compare.h"
#include "loader/model_loader.h"
#include "test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

// The reference files of models/<folder>reference/, as paths relative to models/ (the model
// of X.pN.json is <folder>X.gguf).
std::vector<std::string> reference_files(const std::string& folder) {
  std::vector<std::string> out;
  const fs::path dir = testing::fixture("models/" + folder + "reference");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") {
      out.push_back(folder + "reference/" + e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) out.push_back(folder + "reference/<none>");
  return out;
}

class FidelityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FidelityTest, MatchesReferenceLogits) {
  const std::string rel = GetParam();
  const std::string folder = rel.substr(0, rel.find("reference/"));
  const std::string name = rel.substr(rel.rfind('/') + 1);
  const fs::path ref_path = testing::fixture("models/" + rel);
  PAGODA_REQUIRE_FIXTURE(ref_path);
  std::ifstream in(ref_path);
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::string model_file = name.substr(0, name.find(".p")) + ".gguf";
  const fs::path model_path = testing::fixture("models/" + folder + model_file);
  PAGODA_REQUIRE_FIXTURE(model_path);

  auto loaded = loader::load_model(model_path.string());
  if (!folder.empty() && !loaded.ok() && loaded.status().code() == StatusCode::kUnimplemented) {
    // A fixture architecture (models/arch/ only) the engine refuses as not implemented yet.
    GTEST_SKIP() << loaded.status().to_string();
  }
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const int32_t n_predict = ref["n_predict"].get<int32_t>();
  // The exact softmax (the default) and flash attention's online softmax.
  for (const bool flash : {false, true}) {
    SCOPED_TRACE(flash ? "flash attention" : "exact softmax");
    auto trace = diagnostics::trace_logits(*loaded, ref["prompt"].get<std::string>(), n_predict,
                                           tensor::DType::kF16, flash);
    ASSERT_TRUE(trace.ok()) << trace.status().to_string();

    const auto ref_prompt = ref["prompt_tokens"].get<std::vector<int32_t>>();
    ASSERT_EQ(trace->prompt_tokens, ref_prompt);
    ASSERT_EQ(ref["n_vocab"].get<int32_t>(), loaded->model->config().vocab_size);

    const bool moe =
        name.find("moe") != std::string::npos || name.find("deepseek2") != std::string::npos;
    const double required = moe ? 0.85 : 0.90;
    testing::expect_matches_reference(ref, *trace, testing::fidelity_tolerance(name), required,
                                      name + (flash ? " (flash attention)" : ""));
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& param_info) {
  std::string s = param_info.param.substr(param_info.param.rfind('/') + 1);
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(References, FidelityTest, ::testing::ValuesIn(reference_files("")),
                         test_name);
// The architectures beyond llama/qwen2 (models/arch/: phi3, gemma2, qwen2moe, deepseek2).
INSTANTIATE_TEST_SUITE_P(Arch, FidelityTest, ::testing::ValuesIn(reference_files("arch/")),
                         test_name);

}  // namespace
}  // namespace pagoda
