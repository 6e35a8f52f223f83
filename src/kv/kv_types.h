// Plain ids shared by the KV metadata layer and its users. Block ids index the physical KV
// storage the runner owns ([num_blocks][...][block_size][...]); block 0 is the reserved null
// block, never handed to a sequence (runners may use it as padding).
#pragma once

#include <cstdint>

#include "base/hash.h"

namespace pagoda::kv {

using BlockId = int32_t;
using TokenId = int32_t;
using SeqId = uint64_t;  // one sequence = one request (or one forked sample of it)

inline constexpr BlockId kNullBlockId = 0;

// Prefix-cache key of a full block: XXH3-128 chained over (parent block hash, token ids, extras).
using BlockHash = Hash128;

// The runner copies the KV data of block `src` into block `dst` (every slot, every layer) before
// the forward pass of the step that reports it (copy-on-write of a shared partial block).
struct BlockCopy {
  BlockId src = kNullBlockId;
  BlockId dst = kNullBlockId;
  friend bool operator==(const BlockCopy&, const BlockCopy&) = default;
};

}  // namespace pagoda::kv
