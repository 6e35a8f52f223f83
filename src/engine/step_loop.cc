// run_step: schedule, execute, settle (see step_loop.h).
#include "engine/step_loop.h"

#include <exception>

#include "base/log.h"

namespace pagoda::engine {
namespace {

// The executor's answer; an exception becomes an error status (it fails the plan, not the loop).
Result<step::StepOutput> execute(step::Executor& executor, const step::StepPlan& plan) {
  try {
    return executor.execute(plan);
  } catch (const std::exception& e) {
    return internal_error("the model executor threw: {}", e.what());
  }
}

}  // namespace

StepResult run_step(Scheduler& scheduler, step::Executor& executor,
                    std::unique_lock<std::mutex>* lock) {
  StepResult result;
  result.plan = scheduler.schedule();
  result.used_blocks_scheduled = scheduler.kv().pool().num_used_blocks();
  if (result.plan.empty()) {
    result.events = scheduler.take_pending_events();  // e.g. a beam request that failed
    return result;
  }
  if (lock != nullptr) lock->unlock();
  Result<step::StepOutput> output = execute(executor, result.plan);
  if (lock != nullptr) lock->lock();
  if (!output.ok()) {
    result.status = output.status().with_context("model executor");
  } else {
    Result<std::vector<RequestEvent>> events =
        scheduler.update_from_output(result.plan, output.value());
    if (events.ok()) {
      result.events = std::move(events).value();
      result.prompt_logprobs = std::move(output.value().prompt_logprobs);
      return result;
    }
    result.status = events.status();
  }
  PAGODA_LOG_ERROR("step {} failed: {}", result.plan.step_id, result.status.to_string());
  result.events = scheduler.fail_step(result.plan);
  return result;
}

}  // namespace pagoda::engine
