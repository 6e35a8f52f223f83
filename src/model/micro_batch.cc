#include "model/micro_batch.h"

#include <algorithm>

namespace pagoda::model {

std::vector<MicroBatch> split_micro_batches(const ForwardBatch& whole, int32_t max_parts) {
  const auto T = static_cast<int32_t>(whole.tokens.size());
  const int32_t parts = std::max(1, std::min(max_parts, T));
  std::vector<MicroBatch> out(static_cast<size_t>(parts));
  for (int32_t p = 0; p < parts; ++p) {
    MicroBatch& mb = out[static_cast<size_t>(p)];
    // Rows [begin, end): part p of `parts` near-equal runs.
    const auto begin = static_cast<int32_t>(int64_t{T} * p / parts);
    const auto end = static_cast<int32_t>(int64_t{T} * (p + 1) / parts);
    mb.row_begin = begin;
    for (const SequenceSlice& s : whole.sequences) {
      const int32_t lo = std::max(begin, s.token_begin);
      const int32_t hi = std::min(end, s.token_begin + s.num_tokens);
      if (lo >= hi) continue;
      SequenceSlice part = s;
      part.token_begin = lo - begin;
      part.num_tokens = hi - lo;
      mb.sequences.push_back(part);
    }
    for (size_t j = 0; j < whole.logit_rows.size(); ++j) {
      const int32_t r = whole.logit_rows[j];
      if (r < begin || r >= end) continue;
      mb.logit_rows.push_back(r - begin);
      mb.logit_outputs.push_back(static_cast<int32_t>(j));
    }
    const auto first = static_cast<size_t>(begin), count = static_cast<size_t>(end - begin);
    mb.batch.tokens = whole.tokens.subspan(first, count);
    mb.batch.positions = whole.positions.subspan(first, count);
    mb.batch.sequences = mb.sequences;
    mb.batch.logit_rows = mb.logit_rows;
    mb.batch.flash_attention = whole.flash_attention;
  }
  return out;
}

}  // namespace pagoda::model
