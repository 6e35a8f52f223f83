// What each rank of a split model holds: its weight bytes (Model::weight_bytes) and the bytes of
// its part of one KV cache (its KV heads under tensor parallelism, its layers' under pipeline
// parallelism). `pagoda bench` reports them per rank.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/kv_storage.h"
#include "base/status.h"
#include "model/model.h"

namespace pagoda::model {

struct RankMemory {
  int32_t rank = 0;  // in the job (world rank: stage x tensor_parallel_size + shard)
  uint64_t weight_bytes = 0;
  uint64_t kv_cache_bytes = 0;
};

// On rank 0 of a split model (tensor and/or pipeline parallel): sends the other ranks a report
// step for `kv` (a cache rank 0's forward passes use; a worker makes its part if it has none
// yet) and gathers every rank's figures, in rank order. One entry when the model is not split.
// failed_precondition on a rank other than 0 (the workers answer inside Model::run_worker).
Result<std::vector<RankMemory>> gather_rank_memory(const Model& model,
                                                   const backend::KvStorage& kv);

}  // namespace pagoda::model
