// run_step: schedule, execute, settle (see step.h).
#include "engine/step.h"

#include "base/log.h"

namespace pagoda::engine {

StepResult run_step(Scheduler& scheduler, ModelExecutor& executor) {
  StepResult result;
  result.plan = scheduler.schedule();
  if (result.plan.empty()) return result;
  Result<StepOutput> output = executor.execute(result.plan);
  if (!output.ok()) {
    result.status = output.status().with_context("model executor");
  } else {
    Result<std::vector<RequestEvent>> events =
        scheduler.update_from_output(result.plan, output.value());
    if (events.ok()) {
      result.events = std::move(events).value();
      return result;
    }
    result.status = events.status();
  }
  PAGODA_LOG_ERROR("step {} failed: {}", result.plan.step_id, result.status.to_string());
  result.events = scheduler.fail_step(result.plan);
  return result;
}

}  // namespace pagoda::engine
