// Comparing our logit trace with a peer engine's reference JSON
// (../shared/fixtures/models/reference/*.json: prompt, prompt_tokens, greedy_tokens, positions
// with each row's std and top logits), with the foundation tolerances; shared by the GGUF
// fidelity test and the Hugging Face directory tests (tests/golden/hf).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "diagnostics/logit_trace.h"

namespace pagoda::testing {

// max |dlogit| / std allowed for a model file name: F16/F32 0.02, BF16 0.05, quantised 0.25.
double fidelity_tolerance(const std::string& name);

struct FidelityResult {
  size_t comparable = 0;   // positions compared (prompt + agreeing greedy steps)
  double worst_ratio = 0;  // max over positions of max |dlogit| / std
  int gap_positions = 0;   // positions whose top-1/top-2 gap is > 0.02 std
  int argmax_agree = 0;    // ... where our argmax is the peer's top-1
};

// Checks (gtest EXPECTs, labelled with `label`) every comparable position against `tolerance`
// and the argmax agreement against `required_argmax` (fraction of gap positions), then prints
// one summary line. The prompt tokens must already match.
FidelityResult expect_matches_reference(const nlohmann::json& ref,
                                        const diagnostics::LogitTrace& trace, double tolerance,
                                        double required_argmax, const std::string& label);

}  // namespace pagoda::testing
