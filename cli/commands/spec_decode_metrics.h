// bench serve's speculative-decoding figures, as vLLM's benchmark reads them: the server's
// vllm:spec_decode_* counters scraped from /metrics before and after the run (Prometheus text,
// summed over label sets), and their differences turned into an acceptance rate (accepted /
// drafted tokens) and a mean accepted length (1 + accepted / drafts: tokens per verifying step).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace pagoda::cli {

struct SpecDecodeCounters {
  double num_drafts = 0;
  double num_draft_tokens = 0;
  double num_accepted_tokens = 0;
};

struct SpecDecodeSummary {
  int64_t num_drafts = 0;  // during the run
  int64_t num_draft_tokens = 0;
  int64_t num_accepted_tokens = 0;
  double acceptance_rate = 0;       // accepted / draft tokens (0 when nothing was drafted)
  double mean_accepted_length = 0;  // 1 + accepted / drafts (0 when nothing was drafted)
};

// The counters in a /metrics text; nullopt when the server exports none of them (no
// speculation, or not a vLLM-compatible server).
std::optional<SpecDecodeCounters> read_spec_decode_counters(std::string_view prometheus_text);

// What happened between two scrapes; nullopt when either is missing or a counter went backwards
// (the server restarted) or is not a count.
std::optional<SpecDecodeSummary> spec_decode_delta(const std::optional<SpecDecodeCounters>& before,
                                                   const std::optional<SpecDecodeCounters>& after);

}  // namespace pagoda::cli
