// Micro-batches for pipeline parallelism: one step's ForwardBatch cut into consecutive runs of
// rows so that the stages overlap (stage s runs micro-batch i while stage s-1 runs i+1). A cut may
// fall inside a sequence: its later rows attend to the KV its earlier rows wrote, on each stage,
// before them (the same as chunked prefill), so the outputs are those of the whole batch.
#pragma once

#include <cstdint>
#include <vector>

#include "model/forward_batch.h"

namespace pagoda::model {

struct MicroBatch {
  int32_t row_begin = 0;  // rows [row_begin, row_begin + tokens.size()) of the whole batch
  std::vector<SequenceSlice> sequences;  // token_begin relative to row_begin
  std::vector<int32_t> logit_rows;       // relative to row_begin
  std::vector<int32_t> logit_outputs;    // each logit row's index in the whole batch's logits
  ForwardBatch batch;                    // views of the above and of the whole batch
};

// Cuts `whole` (a valid batch: sequences tiling its rows in order) into at most `max_parts`
// micro-batches of about equal row counts, none empty (fewer parts when there are fewer rows).
// The micro-batches carry no block copies and no hidden rows (precondition: whole.hidden_rows is
// empty; copies are made before the first). The result views `whole`'s arrays.
std::vector<MicroBatch> split_micro_batches(const ForwardBatch& whole, int32_t max_parts);

}  // namespace pagoda::model
