// Executor: what the runner implements for the engine. The engine never sees tensors; it hands
// over a StepPlan and gets sampled token ids back (see step_plan.h for the invariants both sides
// keep). The engine's step loop (engine/step_loop.h) is its only caller.
#pragma once

#include "base/status.h"
#include "step/step_plan.h"

namespace pagoda::step {

class Executor {
 public:
  virtual ~Executor() = default;

  // Executes one plan: block copies, then one forward pass over every entry (writing the KV of
  // each computed token into its block), then sampling for entries with num_samples > 0.
  // An error (a non-ok Result or an exception) fails every request of the plan.
  virtual Result<StepOutput> execute(const StepPlan& plan) = 0;
};

}  // namespace pagoda::step
