// Fidelity against a peer engine: for every ../shared/fixtures/models/reference/*.json, our
// logits for the prompt and the greedy continuation must agree with llama.cpp's within the
// issue's tolerances (relative to each row's std), and our argmax must equal the peer's top-1
// wherever its top-1/top-2 gap is not tiny.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "model/model_loader.h"
#include "runner/logit_trace.h"
#include "test_support.h"

namespace pagoda {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> reference_files() {
  std::vector<std::string> out;
  const fs::path dir = testing::fixture("models/reference");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) out.push_back("<none>");
  return out;
}

double tolerance_for(const std::string& name) {
  if (name.find("-F16") != std::string::npos || name.find("-F32") != std::string::npos) return 0.02;
  if (name.find("-BF16") != std::string::npos) return 0.05;
  return 0.25;
}

class FidelityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(FidelityTest, MatchesReferenceLogits) {
  const std::string name = GetParam();
  const fs::path ref_path = testing::fixture("models/reference/" + name);
  PAGODA_REQUIRE_FIXTURE(ref_path);
  std::ifstream in(ref_path);
  const nlohmann::json ref = nlohmann::json::parse(in);
  const std::string model_file = name.substr(0, name.find(".p")) + ".gguf";
  const fs::path model_path = testing::fixture("models/" + model_file);
  PAGODA_REQUIRE_FIXTURE(model_path);

  auto loaded = model::load_model(model_path.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().to_string();
  const int32_t n_predict = ref["n_predict"].get<int32_t>();
  auto trace = runner::trace_logits(*loaded, ref["prompt"].get<std::string>(), n_predict);
  ASSERT_TRUE(trace.ok()) << trace.status().to_string();

  const auto ref_prompt = ref["prompt_tokens"].get<std::vector<int32_t>>();
  const auto ref_greedy = ref["greedy_tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(trace->prompt_tokens, ref_prompt);
  ASSERT_EQ(ref["n_vocab"].get<int32_t>(), loaded->model->config().vocab_size);

  // Comparable positions: the prompt, then greedy steps while both continuations agree.
  size_t comparable = ref_prompt.size();
  for (size_t k = 0; k < ref_greedy.size() && k < trace->greedy_tokens.size(); ++k) {
    if (ref_greedy[k] != trace->greedy_tokens[k]) break;
    ++comparable;  // the row after greedy token k saw identical inputs
  }
  const auto& positions = ref["positions"];
  ASSERT_GE(positions.size(), comparable);
  const double tol = tolerance_for(name);
  double worst_ratio = 0;
  int gap_positions = 0, argmax_agree = 0;
  for (size_t i = 0; i < comparable; ++i) {
    const auto& pos = positions[i];
    const double std = pos["std"].get<double>();
    const auto& row = trace->rows[i];
    double max_delta = 0;
    for (const auto& entry : pos["top"]) {
      const int32_t id = entry[0].get<int32_t>();
      const double logit = entry[1].get<double>();
      max_delta = std::max(max_delta, std::fabs(row[static_cast<size_t>(id)] - logit));
    }
    worst_ratio = std::max(worst_ratio, max_delta / std);
    if (std::getenv("PAGODA_FIDELITY_VERBOSE") != nullptr) {
      std::printf("  position %zu: max |dlogit|/std = %.4f\n", i, max_delta / std);
    }
    EXPECT_LE(max_delta, tol * std) << name << " position " << i;
    const auto& top = pos["top"];
    const double gap = top[0][1].get<double>() - top[1][1].get<double>();
    if (gap > 0.02 * std) {
      ++gap_positions;
      const int32_t ours =
          static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
      if (ours == top[0][0].get<int32_t>()) ++argmax_agree;
    }
  }
  const double required = name.find("moe") != std::string::npos ? 0.85 : 0.90;
  if (gap_positions > 0) {
    EXPECT_GE(static_cast<double>(argmax_agree) / gap_positions, required) << name;
  }
  std::printf("%s: %zu comparable positions, max |dlogit|/std = %.4f (limit %.2f), argmax %d/%d\n",
              name.c_str(), comparable, worst_ratio, tol, argmax_agree, gap_positions);
}

INSTANTIATE_TEST_SUITE_P(References, FidelityTest, ::testing::ValuesIn(reference_files()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string s = param_info.param;
                           for (char& c : s) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return s;
                         });

}  // namespace
}  // namespace pagoda
