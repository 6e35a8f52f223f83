#include "golden/fidelity_compare.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pagoda::testing {

double fidelity_tolerance(const std::string& name) {
  if (name.find("-F16") != std::string::npos || name.find("-F32") != std::string::npos) return 0.02;
  if (name.find("-BF16") != std::string::npos) return 0.05;
  return 0.25;
}

FidelityResult expect_matches_reference(const nlohmann::json& ref,
                                        const diagnostics::LogitTrace& trace, double tolerance,
                                        double required_argmax, const std::string& label) {
  FidelityResult r;
  const auto ref_prompt = ref["prompt_tokens"].get<std::vector<int32_t>>();
  const auto ref_greedy = ref["greedy_tokens"].get<std::vector<int32_t>>();
  // Comparable positions: the prompt, then greedy steps while both continuations agree.
  r.comparable = ref_prompt.size();
  for (size_t k = 0; k < ref_greedy.size() && k < trace.greedy_tokens.size(); ++k) {
    if (ref_greedy[k] != trace.greedy_tokens[k]) break;
    ++r.comparable;  // the row after greedy token k saw identical inputs
  }
  const auto& positions = ref["positions"];
  EXPECT_GE(positions.size(), r.comparable) << label;
  r.comparable = std::min(r.comparable, std::min(positions.size(), trace.rows.size()));
  for (size_t i = 0; i < r.comparable; ++i) {
    const auto& pos = positions[i];
    const double std = pos["std"].get<double>();
    const auto& row = trace.rows[i];
    double max_delta = 0;
    for (const auto& entry : pos["top"]) {
      const int32_t id = entry[0].get<int32_t>();
      const double logit = entry[1].get<double>();
      if (id < 0 || static_cast<size_t>(id) >= row.size()) {
        ADD_FAILURE() << label << ": reference id " << id << " is outside our vocab";
        continue;
      }
      max_delta = std::max(max_delta, std::fabs(row[static_cast<size_t>(id)] - logit));
    }
    r.worst_ratio = std::max(r.worst_ratio, max_delta / std);
    if (std::getenv("PAGODA_FIDELITY_VERBOSE") != nullptr) {
      std::printf("  position %zu: max |dlogit|/std = %.4f\n", i, max_delta / std);
    }
    EXPECT_LE(max_delta, tolerance * std) << label << " position " << i;
    const auto& top = pos["top"];
    const double gap = top[0][1].get<double>() - top[1][1].get<double>();
    if (gap > 0.02 * std) {
      ++r.gap_positions;
      const int32_t ours =
          static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
      if (ours == top[0][0].get<int32_t>()) ++r.argmax_agree;
    }
  }
  if (r.gap_positions > 0) {
    EXPECT_GE(static_cast<double>(r.argmax_agree) / r.gap_positions, required_argmax) << label;
  }
  std::printf("%s: %zu comparable positions, max |dlogit|/std = %.4f (limit %.2f), argmax %d/%d\n",
              label.c_str(), r.comparable, r.worst_ratio, tolerance, r.argmax_agree,
              r.gap_positions);
  return r;
}

}  // namespace pagoda::testing
