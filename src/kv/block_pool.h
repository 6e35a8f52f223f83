// BlockPool: the fixed set of KV blocks, their reference counts, the free list and the
// hash -> block map of the prefix cache. Mechanism only; KvManager decides what to ask for.
//
// Invariants (check_invariants() verifies all of them):
//  - block 0 is the null block: never free, never allocated, ref count 0, no hash;
//  - every other block is either in use (ref count > 0, not in the free list) or free
//    (ref count 0, in the free list exactly once);
//  - the free list is LRU: free() appends at the tail, allocate() takes from the head, so the
//    block released longest ago is evicted first; touch() unlinks a free block in O(1)
//    (an intrusive doubly-linked list over block ids), which is how a prefix hit revives one;
//  - a block has a hash iff the map sends that hash to it (one block per hash); free blocks
//    keep their hash (still hit-able) until allocate() reuses them, which drops the entry.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/kv_types.h"

namespace pagoda::kv {

class BlockPool {
 public:
  // `num_blocks` counts the null block; precondition num_blocks >= 1 (KvManager validates).
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t num_usable_blocks() const { return num_blocks() - 1; }  // without the null block
  int32_t num_free_blocks() const { return num_free_; }
  int32_t num_used_blocks() const { return num_usable_blocks() - num_free_; }
  int64_t num_cached_blocks() const { return static_cast<int64_t>(hash_to_block_.size()); }
  int64_t num_evictions() const { return num_evictions_; }  // cached blocks reused so far

  // Takes `n` blocks from the head of the free list, evicting their cached hashes; each comes
  // back with ref count 1. Precondition: n <= num_free_blocks().
  void allocate(int32_t n, std::vector<BlockId>& out);
  BlockId allocate_one();

  // Adds one reference to each block. A free block (ref count 0) leaves the free list.
  // Precondition: no null block.
  void touch(std::span<const BlockId> blocks);
  // Drops one reference from each block, in order; a block reaching 0 is appended to the tail of
  // the free list (so the last one of `blocks` is evicted last). Precondition: ref counts > 0.
  void free(std::span<const BlockId> blocks);

  // Prefix cache. lookup() finds the block holding `hash`, in use or free.
  std::optional<BlockId> lookup(const BlockHash& hash) const;
  // Records that in-use `block` (full, its KV computed) has key `hash`. Returns false and records
  // nothing if the block already has a hash or another block already holds this one.
  bool cache(BlockId block, const BlockHash& hash);
  // Forgets every cached hash (blocks keep their ref counts and places). Returns how many.
  int64_t reset_prefix_cache();

  // Introspection (tests, stats).
  int32_t ref_count(BlockId block) const;
  std::optional<BlockHash> block_hash(BlockId block) const;
  bool is_free(BlockId block) const;
  std::vector<BlockId> free_list() const;  // head (evicted next) to tail
  // O(num_blocks) check of every invariant above; the message names the first violation.
  Status check_invariants() const;

 private:
  static constexpr BlockId kNil = -1;
  void check_id(BlockId block) const;
  void unlink(BlockId block);
  void push_back(BlockId block);
  void drop_hash(BlockId block);

  std::vector<int32_t> ref_counts_;
  // Intrusive free list: prev_/next_ link free blocks; kNil ends it.
  std::vector<BlockId> prev_;
  std::vector<BlockId> next_;
  std::vector<uint8_t> in_free_list_;
  BlockId head_ = kNil;
  BlockId tail_ = kNil;
  int32_t num_free_ = 0;
  int64_t num_evictions_ = 0;
  // Prefix cache: per-block hash and its reverse map.
  std::vector<BlockHash> hashes_;
  std::vector<uint8_t> has_hash_;
  std::unordered_map<BlockHash, BlockId, Hash128Hasher> hash_to_block_;
};

}  // namespace pagoda::kv
