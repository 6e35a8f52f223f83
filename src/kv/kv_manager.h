// KvManager: the facade the scheduler uses for KV memory. It owns the BlockPool and one block
// table per sequence, and implements automatic prefix caching, copy-on-write forks and usage
// stats. Metadata only: the runner owns the KV tensors and addresses them by the block ids
// handed out here ([num_blocks][...][block_size][...], block 0 = null block).
//
// A sequence's life: get_computed_blocks() (cached prefix, on admission) -> allocate_slots()
// each step before its tokens are computed -> cache_blocks() once they are scheduled (the
// engine publishes blocks of the step being planned; see Scheduler) ->
// free() on finish, abort or preemption. fork() makes a child that shares the parent's blocks.
//
// Sliding window (KvManagerConfig::sliding_window > 0: every layer of the model attends through
// that window, vLLM's SlidingWindowManager): a query at position p reads only positions
// [p - window + 1, p], so once a sequence has computed c tokens no later query reads a block
// wholly before position c - window + 1. allocate_slots() returns such blocks to the pool and
// puts the null block in their table entries (the table keeps its length, so position p still
// lives in entry p / block_size); a sequence holds at most ceil((window - 1 + tokens per
// step) / block_size) + 1 blocks. A released block keeps its prefix-cache hash (it sits in the
// free list, evictable and still hit-able), and a prefix hit needs only the blocks inside the
// window of its first uncomputed position: earlier ones may be evicted (see
// get_computed_blocks). docs/design/sliding-window-kv.md.
//
// Hybrid models (KvManagerConfig::group_windows; vLLM's KV cache groups): layers with different
// windows (Gemma 2/3: local and global layers) form groups, and a sequence has one table per
// group over the one pool, all of the same length (entry i holds positions [i*bs, (i+1)*bs) for
// that group's layers). Each group releases behind its own window (a full-attention group never
// does); a prefix hit is the longest one valid in every group; a block's prefix-cache key is
// the chain hash for group 0 and that hash keyed by the group for the others, so a group only
// ever hits its own blocks. The runner addresses group g's layers through table g.
//
// Invariants (check_invariants() verifies them): each block's ref count equals the number of
// block tables holding it; a table never holds a block twice; a table holds the null block only
// in its leading entries released to the sliding window (never without a window); a table
// covers the sequence's computed tokens; only full blocks of computed (or scheduled) tokens
// carry prefix-cache hashes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "kv/block_pool.h"
#include "kv/kv_types.h"

namespace pagoda::kv {

struct KvManagerConfig {
  int32_t num_blocks = 0;   // physical blocks, including the reserved null block 0; >= 2
  int32_t block_size = 16;  // tokens per block; 1..65536
  bool enable_prefix_caching = true;
  // Every layer's attention window in tokens (0: full attention somewhere: nothing is released).
  // 0..2^30.
  int32_t sliding_window = 0;
  // Hybrid models: one entry per layer group, its window (0: full attention), each 0..2^30; at
  // most kMaxGroups entries. Empty: one group with `sliding_window` (which must then be 0 when
  // this is set).
  std::vector<int32_t> group_windows = {};
};

// What the manager needs to know of a request; the caller owns the data (valid for the call).
struct SequenceView {
  SeqId id = 0;
  std::span<const TokenId> token_ids;  // every known token: prompt, then outputs
  int64_t num_computed_tokens = 0;     // prefix of token_ids whose KV is (being) written
  std::string_view cache_salt;         // "" shares the prefix cache with every unsalted request
  uint32_t lora_id = 0;                // LoRA adapter (0: none); part of every block hash
};

// The longest cached prefix of a sequence's tokens (always full blocks, never all its tokens:
// at least the last token is left to compute so the model produces logits). With a sliding
// window, leading blocks no query of the sequence will read are kNullBlockId.
struct PrefixHit {
  std::vector<BlockId> blocks;  // blocks[i] holds tokens [i*block_size, (i+1)*block_size)
  std::vector<std::vector<BlockId>> other_groups;  // groups 1.. (hybrid), each like `blocks`
  int64_t num_tokens = 0;                          // blocks.size() * block_size
  std::vector<BlockHash> block_hashes;  // chain hashes computed by the lookup, >= blocks.size()
};

struct SlotAllocation {
  std::vector<BlockId> new_block_ids;  // appended to the table this call, in table order
  std::vector<std::vector<BlockId>> other_groups_new_block_ids;  // groups 1.. (hybrid)
  std::vector<BlockCopy> copies;  // copy-on-write: dst replaced src in a table (any group)
};

struct KvStats {
  int32_t num_blocks = 0;            // usable blocks (without the null block)
  int32_t num_used_blocks = 0;       // ref count > 0
  int32_t num_free_blocks = 0;       // ref count 0, including cached (evictable) ones
  int64_t num_cached_blocks = 0;     // blocks holding a prefix-cache hash, used or free
  double usage = 0;                  // num_used_blocks / num_blocks
  int64_t prefix_cache_queries = 0;  // tokens looked up on admission (allocate_slots with hit)
  int64_t prefix_cache_hits = 0;     // of those, tokens found cached
  int64_t num_evictions = 0;         // cached blocks reused for new data
  int64_t num_cow_copies = 0;        // copy-on-write block copies requested
};

class KvManager {
 public:
  static constexpr int32_t kMaxGroups = 8;
  // Validates the config (field names in the message).
  static Result<KvManager> create(const KvManagerConfig& config);

  int32_t block_size() const { return config_.block_size; }
  bool prefix_caching_enabled() const { return config_.enable_prefix_caching; }
  const BlockPool& pool() const { return pool_; }
  // Blocks needed to hold `num_tokens` tokens (ceil division).
  int64_t num_blocks_for_tokens(int64_t num_tokens) const;
  int32_t sliding_window() const { return config_.sliding_window; }
  int32_t num_groups() const { return static_cast<int32_t>(windows_.size()); }
  int32_t group_window(int32_t group) const { return windows_[static_cast<size_t>(group)]; }
  // The first block a query of `group`'s layers at position `pos` reads: 0 without a window,
  // else the block of max(0, pos - window + 1).
  int64_t first_block_in_window(int64_t pos, int32_t group = 0) const;
  // The most blocks one sequence of `num_tokens` tokens holds at once when a step computes at
  // most `max_step_tokens` of its positions (drafts included), summed over the groups: per group
  // all of them without a window, else at most ceil((window - 1 + max_step_tokens) /
  // block_size) + 1.
  int64_t max_blocks_held(int64_t num_tokens, int64_t max_step_tokens) const;
  // Blocks of the sequence's tables that are not the null block (tests, stats): all groups', or
  // one group's.
  int64_t num_held_blocks(SeqId id) const;
  int64_t num_held_blocks(SeqId id, int32_t group) const;

  // The cached prefix of seq.token_ids (empty when caching is off). Takes no references and
  // changes nothing: pass the result to allocate_slots() before anything else touches the pool.
  // With a sliding window the hit is the longest run of full blocks whose window blocks (those
  // holding positions >= hit tokens - window + 1) are all cached; the blocks before them need
  // not be (they come back as kNullBlockId).
  PrefixHit get_computed_blocks(const SequenceView& seq) const;

  // Makes room for `num_new_tokens` tokens after the computed ones (plus `num_lookahead_tokens`
  // spare slots), growing the sequence's table on demand. With `hit` (admission: the sequence
  // has no blocks and seq.num_computed_tokens == 0), the hit blocks are taken first and the new
  // tokens start after them; the caller then sets num_computed_tokens = hit->num_tokens.
  // Writing into a block shared with another sequence (after fork) replaces it by a private
  // copy, reported in `copies`. Returns nullopt, changing nothing, when the pool lacks blocks
  // (except that, with a sliding window, blocks before the window of position
  // seq.num_computed_tokens are released first, as they would be on success).
  // Precondition: start + num_new_tokens <= seq.token_ids.size().
  std::optional<SlotAllocation> allocate_slots(const SequenceView& seq, int64_t num_new_tokens,
                                               const PrefixHit* hit = nullptr,
                                               int64_t num_lookahead_tokens = 0);

  // Publishes the sequence's full blocks of its first seq.num_computed_tokens tokens in the
  // prefix cache. The caller guarantees their K/V is written before any reader of a later step
  // or, in the same step, before it is read. A block whose hash another block holds stays
  // private.
  void cache_blocks(const SequenceView& seq);

  // Returns the sequence's blocks to the pool, last block first (so tail blocks are evicted
  // before the shared prefix), and forgets the sequence. Unknown ids are ignored.
  void free(SeqId id);

  // Frees the sequence's blocks past its first `num_blocks` (speculative decoding: blocks that
  // held only rejected drafts), last first. Precondition: none of them is in the prefix cache
  // (they hold positions past the sequence's known tokens). Unknown ids are ignored.
  void trim(SeqId id, int64_t num_blocks);

  // Makes `child` share the blocks covering parent.num_computed_tokens (ref counts +1). The
  // child's computed tokens equal the parent's; the first write into a shared partial block by
  // either side copies it (see allocate_slots).
  Status fork(const SequenceView& parent, SeqId child);

  bool contains(SeqId id) const { return seqs_.count(id) != 0; }
  // Group `group`'s table (group 0: the only one without hybrid groups); empty for unknown ids.
  std::span<const BlockId> block_table(SeqId id, int32_t group = 0) const;
  size_t num_sequences() const { return seqs_.size(); }

  KvStats stats() const;
  // Drops every prefix-cache entry (e.g. after a weight reload). Returns how many.
  int64_t reset_prefix_cache();

  // O(num_blocks + table entries) check of the invariants above; message names the first bad one.
  Status check_invariants() const;

 private:
  struct GroupTable {
    std::vector<BlockId> blocks;
    int64_t num_released_blocks = 0;  // leading entries released to the window (null)
  };
  struct SeqState {
    std::vector<GroupTable> groups;       // one per group, all of the same length
    std::vector<BlockHash> block_hashes;  // chain over the sequence's first full blocks
    int64_t num_cached_blocks = 0;        // leading blocks already offered to the cache
  };
  // Releases the blocks of each group's table before its window of position `num_computed`.
  void release_outside_window(SeqState& state, int64_t num_computed);
  // The prefix-cache key of chain hash `hash` in `group` (the hash itself for group 0).
  static BlockHash group_key(const BlockHash& hash, int32_t group);

  explicit KvManager(const KvManagerConfig& config);

  KvManagerConfig config_;
  std::vector<int32_t> windows_;  // per group (at least one)
  BlockPool pool_;
  std::unordered_map<SeqId, SeqState> seqs_;
  int64_t prefix_cache_queries_ = 0;
  int64_t prefix_cache_hits_ = 0;
  int64_t num_cow_copies_ = 0;
};

}  // namespace pagoda::kv
