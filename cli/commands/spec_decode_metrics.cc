#include "cli/commands/spec_decode_metrics.h"

#include <cmath>

#include "router/backend_load.h"

namespace pagoda::cli {
namespace {

// Counts up to 2^53 are exact doubles; anything else (or a negative difference) is not ours.
constexpr double kMaxCount = 9007199254740992.0;

}  // namespace

std::optional<SpecDecodeCounters> read_spec_decode_counters(std::string_view text) {
  const std::optional<double> drafts =
      router::sum_metric(text, "vllm:spec_decode_num_drafts_total");
  const std::optional<double> draft_tokens =
      router::sum_metric(text, "vllm:spec_decode_num_draft_tokens_total");
  const std::optional<double> accepted =
      router::sum_metric(text, "vllm:spec_decode_num_accepted_tokens_total");
  if (!drafts && !draft_tokens && !accepted) return std::nullopt;
  return SpecDecodeCounters{drafts.value_or(0), draft_tokens.value_or(0), accepted.value_or(0)};
}

std::optional<SpecDecodeSummary> spec_decode_delta(const std::optional<SpecDecodeCounters>& before,
                                                   const std::optional<SpecDecodeCounters>& after) {
  if (!before || !after) return std::nullopt;
  const auto diff = [](double a, double b) -> std::optional<int64_t> {
    const double d = b - a;
    if (!(d >= 0) || d > kMaxCount || d != std::floor(d)) return std::nullopt;
    return static_cast<int64_t>(d);
  };
  const std::optional<int64_t> drafts = diff(before->num_drafts, after->num_drafts);
  const std::optional<int64_t> tokens = diff(before->num_draft_tokens, after->num_draft_tokens);
  const std::optional<int64_t> accepted =
      diff(before->num_accepted_tokens, after->num_accepted_tokens);
  if (!drafts || !tokens || !accepted || *accepted > *tokens) return std::nullopt;
  SpecDecodeSummary s;
  s.num_drafts = *drafts;
  s.num_draft_tokens = *tokens;
  s.num_accepted_tokens = *accepted;
  if (*tokens > 0)
    s.acceptance_rate = static_cast<double>(*accepted) / static_cast<double>(*tokens);
  if (*drafts > 0) {
    s.mean_accepted_length = 1 + static_cast<double>(*accepted) / static_cast<double>(*drafts);
  }
  return s;
}

}  // namespace pagoda::cli
