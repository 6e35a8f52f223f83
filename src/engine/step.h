// run_step: one engine iteration, schedule -> execute -> settle, over any ModelExecutor. The
// future thread-safe step loop calls this in a loop; tests call it with a fake executor.
#pragma once

#include <vector>

#include "base/status.h"
#include "engine/model_executor.h"
#include "engine/request_event.h"
#include "engine/scheduler.h"
#include "engine/step_plan.h"

namespace pagoda::engine {

struct StepResult {
  StepPlan plan;                     // what ran (empty: nothing was runnable)
  std::vector<RequestEvent> events;  // new tokens and finishes
  Status status;  // the executor's error (or a malformed output); its requests then finished
                  // with FinishReason::kError, reported in events
};

StepResult run_step(Scheduler& scheduler, ModelExecutor& executor);

}  // namespace pagoda::engine
