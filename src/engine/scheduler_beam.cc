// The Scheduler's beam-search bookkeeping (see beam_search.h and docs/design/beam-search.md):
// beams are Requests forked copy-on-write from their parents; a group takes its beam step once
// every live beam reported its top 2 x width logprobs.
#include <algorithm>

#include "base/check.h"
#include "engine/scheduler.h"

namespace pagoda::engine {

Status Scheduler::check_beam_request(const NewRequest& request) const {
  const BeamSearchParams& p = *request.beam_search;
  if (p.beam_width < 1 || p.beam_width > BeamSearchParams::kMaxBeamWidth ||
      p.beam_width > config_.max_num_seqs) {
    return invalid_argument("beam_width must be in [1, min({}, max_num_seqs={})], got {}",
                            BeamSearchParams::kMaxBeamWidth, config_.max_num_seqs, p.beam_width);
  }
  if (request.n != 1) return invalid_argument("n must be 1 for a beam-search sequence");
  if (request.beam_num_results < 1 || request.beam_num_results > p.beam_width) {
    return invalid_argument("n must be in [1, beam_width={}], got {}", p.beam_width,
                            request.beam_num_results);
  }
  if (request.sampling.pooling != PoolingType::kNone || request.sampling_gate) {
    return invalid_argument("beam search cannot pool or wait for a sampling gate");
  }
  // The beams share the prompt's blocks; each may own every block of its outputs plus the
  // partial block it copied on write. The request must fit the cache alone.
  const auto num_prompt = static_cast<int64_t>(request.prompt_token_ids.size());
  const int64_t blocks = kv_.num_blocks_for_tokens(num_prompt) +
                         p.beam_width * (kv_.num_blocks_for_tokens(request.stop.max_tokens) + 1);
  if (blocks > kv_.pool().num_usable_blocks()) {
    return invalid_argument(
        "beam search over a {}-token prompt with best_of {} and max_tokens {} may need {} KV "
        "blocks but the cache has {}",
        num_prompt, p.beam_width, request.stop.max_tokens, blocks, kv_.pool().num_usable_blocks());
  }
  return Status();
}

void Scheduler::add_beam_group(Request* root, const BeamSearchParams& params, int32_t num_results) {
  root->beam_root_ = root->id_;
  // Greedy with the 2 x width most likely tokens reported (raw log_softmax): the beam step
  // chooses the tokens, not the sampler.
  auto sampling = std::make_shared<SamplingParams>(*root->sampling_);
  sampling->temperature = 0.0f;
  sampling->logprobs = 2 * params.beam_width;
  root->sampling_ = std::move(sampling);
  auto [it, inserted] =
      beam_groups_.try_emplace(root->id_, root->id_, params, num_results, root->stop_.max_tokens);
  PAGODA_CHECK(inserted);
  it->second.live.push_back(root->id_);
  it->second.cum[root->id_] = 0.0;
}

bool Scheduler::beam_awaits_siblings(const Request& r) const {
  if (!r.beam_root_) return false;
  const auto it = beam_groups_.find(*r.beam_root_);
  return it != beam_groups_.end() && it->second.reported.count(r.id_) != 0;
}

int32_t Scheduler::num_beam_seqs() const {
  int32_t n = 0;
  for (const auto& [root, g] : beam_groups_) {
    if (g.admitted) n += g.params.beam_width;
  }
  return n;
}

std::vector<RequestEvent> Scheduler::take_pending_events() {
  std::vector<RequestEvent> events = std::move(pending_events_);
  pending_events_.clear();
  return events;
}

void Scheduler::settle_beam(Request* r, const step::SampledTokens& o,
                            std::vector<RequestEvent>& events) {
  BeamGroup& g = beam_groups_.at(*r->beam_root_);
  g.reported[r->id_] = o.logprobs[0];
  if (g.reported.size() == g.live.size()) take_beam_step(g, events);
}

Request* Scheduler::fork_beam(Request* parent) {
  auto child = std::make_unique<Request>(*parent);
  child->id_ = next_id_++;
  child->num_preemptions_ = 0;
  child->scheduled_since_admission_ = false;
  child->in_flight_ = false;
  child->draft_token_ids_.clear();
  PAGODA_CHECK(kv_.fork(parent->kv_view(), child->id_).ok());
  Request* c = child.get();
  running_.push_back(c);
  requests_.emplace(c->id_, std::move(child));
  return c;
}

void Scheduler::take_beam_step(BeamGroup& g, std::vector<RequestEvent>& events) {
  const RequestId root = g.root_id;
  const int32_t width = g.params.beam_width;
  std::vector<Request*> parents;
  std::vector<BeamCandidates> cands;
  for (const RequestId id : g.live) {
    Request* p = lookup(id);
    PAGODA_CHECK(p != nullptr);
    parents.push_back(p);
    cands.push_back(BeamCandidates{g.cum.at(id), g.reported.at(id).top});
  }
  const StopParams stop = parents[0]->stop_;
  const auto is_stop = [&stop](TokenId t) {
    const auto has = [t](const std::vector<TokenId>& ids) {
      return std::find(ids.begin(), ids.end(), t) != ids.end();
    };
    return (!stop.ignore_eos && has(stop.eos_token_ids)) || has(stop.stop_token_ids);
  };
  const BeamStep step = select_beams(cands, width, is_stop);
  for (const BeamChoice& f : step.finished) {
    BeamHypothesis h;
    const auto out = parents[f.parent]->output_token_ids();
    h.output_token_ids.assign(out.begin(), out.end());
    h.output_token_ids.push_back(f.token);
    h.cumulative_logprob = f.cumulative_logprob;
    h.finish_reason = FinishReason::kStop;
    h.stop_token_id = f.token;
    g.hyps.add(std::move(h));
  }
  // Forks first (a child copies its parent's tokens before the parent takes its own), then the
  // pruned parents go (their private blocks back to the pool at once), then the new tokens.
  std::vector<bool> used(parents.size(), false);
  std::vector<Request*> beams;
  for (const BeamChoice& c : step.next) {
    if (!used[c.parent]) {
      used[c.parent] = true;
      beams.push_back(parents[c.parent]);
    } else {
      beams.push_back(fork_beam(parents[c.parent]));
    }
  }
  for (size_t i = 0; i < parents.size(); ++i) {
    if (!used[i]) finish(parents[i], FinishReason::kStop);
  }
  g.live.clear();
  g.cum.clear();
  g.reported.clear();
  for (size_t j = 0; j < beams.size(); ++j) {
    Request* b = beams[j];
    b->token_ids_.push_back(step.next[j].token);
    ++num_generation_tokens_;
    // The runner's state for the beam (its sampler's history) follows the chosen token, not
    // the one it sampled: it is rebuilt from history_token_ids.
    b->scheduled_since_admission_ = false;
    g.live.push_back(b->id_);
    g.cum[b->id_] = step.next[j].cumulative_logprob;
  }
  if (beams.empty()) {
    end_beam_group(root, FinishReason::kStop, "", events);
    return;
  }
  const int64_t length = beams[0]->num_output_tokens();
  if (length >= stop.max_tokens ||
      (config_.max_model_len > 0 && beams[0]->num_tokens() >= config_.max_model_len)) {
    for (Request* b : beams) {
      BeamHypothesis h;
      const auto out = b->output_token_ids();
      h.output_token_ids.assign(out.begin(), out.end());
      h.cumulative_logprob = g.cum.at(b->id_);
      h.finish_reason = FinishReason::kLength;
      g.hyps.add(std::move(h));
    }
    end_beam_group(root, FinishReason::kLength, "", events);
    return;
  }
  if (g.hyps.is_done(step.next[0].cumulative_logprob, length)) {
    end_beam_group(root, FinishReason::kStop, "", events);
  }
}

void Scheduler::end_beam_group(RequestId root, FinishReason reason, const std::string& error,
                               std::vector<RequestEvent>& events, std::vector<Candidate>* chosen,
                               int64_t* budget) {
  const auto it = beam_groups_.find(root);
  if (it == beam_groups_.end()) return;
  BeamGroup& g = it->second;
  RequestEvent ev;
  ev.id = root;
  ev.finish_reason = reason;
  ev.error = error;
  if (const Request* any = g.live.empty() ? nullptr : lookup(g.live[0])) {
    fill_event_info(*any, ev);
    ev.parent_id.reset();
    ev.sample_index = 0;
  }
  if (reason == FinishReason::kStop || reason == FinishReason::kLength) {
    ev.beams = g.hyps.sorted();
    if (ev.beams.size() > static_cast<size_t>(g.n)) ev.beams.resize(static_cast<size_t>(g.n));
  }
  for (const RequestId id : g.live) {
    Request* r = lookup(id);
    if (r == nullptr) continue;
    if (chosen != nullptr) {
      const auto c = std::find_if(chosen->begin(), chosen->end(),
                                  [r](const Candidate& x) { return x.r == r; });
      if (c != chosen->end()) {
        *budget += c->num_new_tokens + c->num_drafts;
        chosen->erase(c);
      }
    }
    finish(r, reason == FinishReason::kError ? FinishReason::kError : FinishReason::kStop);
  }
  beam_groups_.erase(it);
  events.push_back(std::move(ev));
}

}  // namespace pagoda::engine
