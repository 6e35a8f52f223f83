// StepMessage: what rank 0 of a tensor-parallel job sends the other ranks before each forward
// pass, so they run the same pass on their shards: the ForwardBatch (tokens, positions, every
// sequence's slice and block tables, logit rows, block copies) and the shape of the KV cache it
// runs against (the other ranks keep a cache of that shape per id: same blocks, their own KV
// heads). One flat little-endian byte string, decoded with every count checked against the
// bytes present before anything is allocated (a peer is trusted no more than a file).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "model/forward_batch.h"
#include "tensor/dtype.h"

namespace pagoda::model {

enum class StepOp : uint32_t {
  kForward = 1,   // run the batch against cache kv_id
  kShutdown = 2,  // rank 0's model is gone: the workers return
  // Every rank reports its weight bytes and the bytes of cache kv_id (made if new), gathered
  // over the job (model/rank_memory.h). Encoded as kForward, with an empty batch.
  kReport = 3,
};

// The KV cache a step runs against: an id rank 0 chose, and its shape.
struct KvCacheShape {
  uint64_t id = 0;
  int64_t num_blocks = 0;
  int32_t block_size = 0;
  tensor::DType dtype = tensor::DType::kF16;
  // A hybrid model's layer groups share arrays (model::kv_layout's kv_groups).
  bool kv_groups = false;
};

// A decoded message: owning arrays, and `batch` whose spans point into them.
struct StepMessage {
  StepOp op = StepOp::kShutdown;
  KvCacheShape kv;
  std::vector<int32_t> tokens, positions, logit_rows, tables;
  std::vector<SequenceSlice> sequences;
  std::vector<KvBlockCopy> copies;
  ForwardBatch batch;
};

std::vector<uint8_t> encode_step(StepOp op, const KvCacheShape& kv, const ForwardBatch& batch);

// invalid_argument naming the field when `bytes` is not a well-formed message; the batch it
// returns is still to be validated against the model (Model::forward does).
Result<StepMessage> decode_step(std::span<const uint8_t> bytes);

}  // namespace pagoda::model
