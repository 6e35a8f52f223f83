// run_step: one engine iteration, schedule -> execute -> settle, over any step::Executor. The
// only copy of the loop body: EngineCore's thread calls it step after step (releasing its mutex
// while the executor runs), and the scheduler tests call it with the fake executor.
#pragma once

#include <mutex>
#include <vector>

#include "base/status.h"
#include "engine/request_event.h"
#include "engine/scheduler.h"
#include "step/executor.h"
#include "step/step_plan.h"

namespace pagoda::engine {

struct StepResult {
  step::StepPlan plan;                // what ran (empty: nothing was runnable)
  int64_t used_blocks_scheduled = 0;  // KV blocks in use once the plan was scheduled
  std::vector<RequestEvent> events;   // new tokens and finishes
  std::vector<step::PromptLogprobs> prompt_logprobs;  // the executor's, on success
  Status status;  // the executor's error (a non-ok Result, an exception, or a malformed output);
                  // its requests then finished with FinishReason::kError, reported in events
};

// Schedules one plan and, if it is not empty, executes and settles it. When `lock` is given it
// must hold the mutex guarding `scheduler`; it is released while the executor runs (so requests
// can be added and aborts queued meanwhile) and held again when this returns.
StepResult run_step(Scheduler& scheduler, step::Executor& executor,
                    std::unique_lock<std::mutex>* lock = nullptr);

}  // namespace pagoda::engine
