// Block hashes for automatic prefix caching. A full block's key commits to every token before it:
//   root   = salt.empty() ? H("pagoda.kv.root" || secret)
//                         : H("pagoda.kv.salt" || secret || len || salt)
//   hash_i = XXH3-128(hash_{i-1} || token ids of block i (int32 LE) || extra keys (uint64 LE))
// so two sequences share block i only if they agree on blocks 0..i and on the salt. Only full
// blocks are ever hashed. `secret` is 16 random bytes drawn once per process, so block hashes
// cannot be precomputed (or collided on purpose) from outside and mean nothing to another
// process.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "kv/kv_types.h"

namespace pagoda::kv {

// The per-process random secret mixed into every root.
const std::array<uint64_t, 2>& process_hash_secret();

// The parent hash of block 0 (distinct per cache salt; "" means no salt) and per LoRA adapter
// (lora_id 0: the base model), so sequences under different adapters never share blocks.
BlockHash root_block_hash(std::string_view cache_salt, uint32_t lora_id = 0);

// The hash of one full block given its parent's hash.
BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens,
                     std::span<const uint64_t> extra_keys = {});

// Extends `hashes` (the chain of the first hashes.size() full blocks of `tokens`) up to
// `num_blocks` full blocks. Precondition: num_blocks * block_size <= tokens.size().
void extend_block_hashes(std::vector<BlockHash>& hashes, std::span<const TokenId> tokens,
                         int32_t block_size, int64_t num_blocks, std::string_view cache_salt,
                         uint32_t lora_id = 0);

}  // namespace pagoda::kv
