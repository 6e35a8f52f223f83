// ModelExecutor: the interface the runner implements for the engine. The engine never sees
// tensors; it hands over a StepPlan and gets sampled token ids back (see step_plan.h for the
// invariants both sides keep).
#pragma once

#include "base/status.h"
#include "engine/step_plan.h"

namespace pagoda::engine {

class ModelExecutor {
 public:
  virtual ~ModelExecutor() = default;

  // Executes one plan: block copies, then one forward pass over every entry (writing the KV of
  // each computed token into its block), then sampling for entries with num_samples > 0.
  // An error fails every request of the plan (Scheduler::fail_step).
  virtual Result<StepOutput> execute(const StepPlan& plan) = 0;
};

}  // namespace pagoda::engine
