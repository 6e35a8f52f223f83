// Proposer: where speculative drafts come from (prompt lookup, a draft model). After sampling a
// step, the runner hands the proposer every plan entry (in plan order) with the request's known
// tokens; for the sampled ones it may return drafts for the request's next step (and the
// distributions they were drawn from, for rejection sampling with a full q). A proposer with
// state of its own (a draft model's KV cache) also sees the entries it does not draft for, so it
// can keep up with every computed token (prefill chunks too).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/status.h"
#include "sampling/sampler.h"
#include "step/step_plan.h"
#include "structured/constraint.h"

namespace pagoda::runner {

struct ProposalRequest {
  const step::ScheduledRequest* entry = nullptr;  // never null
  // The request's known tokens after this step: prompt then outputs (for a prefill chunk, up to
  // the chunk's end), token i at position i.
  std::span<const int32_t> tokens;
  // The entry sampled in this step (drafts may be proposed), and under a structured-output
  // constraint (the runner verifies against the mask).
  bool sampled = false;
  bool constrained = false;
  // The request's constraint after `tokens` (null: unconstrained, or not built yet): a draft
  // model advances a copy of it through its drafts to mask its own q.
  const structured::Constraint* constraint = nullptr;
  // The request's sampler after `tokens` (when sampled): a draft model's proposals use a copy
  // (same processors, penalties over its own drafts too) with the RNG reseeded to draft_seed.
  const sampling::Sampler* sampler = nullptr;
  uint64_t draft_seed = 0;
  // The most drafts the runner's cost rule (DraftPacer) lets the request propose; 0: none (its
  // drafting does not pay). The runner also truncates the outputs to it.
  int32_t max_drafts = INT32_MAX;
  // Outputs (cleared by the runner): the drafts, and empty or [drafts][vocab] their q.
  std::vector<int32_t>* draft_tokens = nullptr;
  std::vector<float>* draft_probs = nullptr;
};

// The forward passes of the last propose() (a proposer that runs a model): the runner's cost rule
// prices a draft from passes that only draft, not from the first pass when it also caught up a
// prompt or a pause's worth of tokens (a different regime: counting it made drafting look
// several times dearer than it is and kept the demo pair paused at 0.98x of plain decoding while
// fixed k = 4 gave 1.30x).
struct ProposalPasses {
  int32_t drafting_rows = 0;      // requests drafted for
  int64_t first_pass_tokens = 0;  // the first pass: catch-up rows plus one per drafting request
  double first_pass_seconds = 0;
  // The first pass caught up more than a drafting step leaves behind (k + 1 tokens per request):
  // a prompt, or the tokens decoded while the request did not draft.
  bool first_pass_caught_up = false;
  int32_t later_passes = 0;  // each one token per request still drafting
  double later_pass_seconds = 0;
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Called once per executed plan, after sampling, with one entry per plan request.
  virtual Status propose(const step::StepPlan& plan, std::span<ProposalRequest> requests) = 0;
  // The passes of the last propose(); nullopt for a proposer without forward passes (its time is
  // taken whole).
  virtual std::optional<ProposalPasses> last_passes() const { return std::nullopt; }
};

}  // namespace pagoda::runner
