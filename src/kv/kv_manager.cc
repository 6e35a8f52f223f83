// KvManager: block tables, prefix-cache lookups and copy-on-write over a BlockPool.
#include "kv/kv_manager.h"

#include <algorithm>

#include "base/check.h"
#include "kv/block_hash.h"

namespace pagoda::kv {

namespace {
constexpr int32_t kMaxBlockSize = 1 << 16;
constexpr int32_t kMaxSlidingWindow = 1 << 30;

// The blocks of `blocks` that are not the null block (released to a sliding window).
std::vector<BlockId> held(std::span<const BlockId> blocks) {
  std::vector<BlockId> out;
  out.reserve(blocks.size());
  for (const BlockId b : blocks) {
    if (b != kNullBlockId) out.push_back(b);
  }
  return out;
}
}  // namespace

Result<KvManager> KvManager::create(const KvManagerConfig& config) {
  if (config.num_blocks < 2) {
    return invalid_argument("kv num_blocks must be >= 2 (block 0 is reserved), got {}",
                            config.num_blocks);
  }
  if (config.block_size < 1 || config.block_size > kMaxBlockSize) {
    return invalid_argument("kv block_size must be in [1, {}], got {}", kMaxBlockSize,
                            config.block_size);
  }
  if (config.sliding_window < 0 || config.sliding_window > kMaxSlidingWindow) {
    return invalid_argument("kv sliding_window must be in [0, {}], got {}", kMaxSlidingWindow,
                            config.sliding_window);
  }
  return KvManager(config);
}

KvManager::KvManager(const KvManagerConfig& config) : config_(config), pool_(config.num_blocks) {}

int64_t KvManager::num_blocks_for_tokens(int64_t num_tokens) const {
  PAGODA_CHECK(num_tokens >= 0);
  return num_tokens / config_.block_size + (num_tokens % config_.block_size != 0 ? 1 : 0);
}

int64_t KvManager::first_block_in_window(int64_t pos) const {
  if (config_.sliding_window == 0) return 0;
  return std::max<int64_t>(0, pos - config_.sliding_window + 1) / config_.block_size;
}

int64_t KvManager::max_blocks_held(int64_t num_tokens, int64_t max_step_tokens) const {
  PAGODA_CHECK(max_step_tokens >= 0);
  const int64_t all = num_blocks_for_tokens(num_tokens);
  if (config_.sliding_window == 0) return all;
  // A step computing [c, c + n) reads positions [c - window + 1, c + n): a span of
  // window - 1 + n positions, which touches at most ceil(span / block_size) + 1 blocks.
  return std::min(all, num_blocks_for_tokens(config_.sliding_window - 1 + max_step_tokens) + 1);
}

int64_t KvManager::num_held_blocks(SeqId id) const {
  const std::span<const BlockId> table = block_table(id);
  return static_cast<int64_t>(
      std::count_if(table.begin(), table.end(), [](BlockId b) { return b != kNullBlockId; }));
}

PrefixHit KvManager::get_computed_blocks(const SequenceView& seq) const {
  PrefixHit hit;
  if (!config_.enable_prefix_caching || seq.token_ids.empty()) return hit;
  const int32_t bs = config_.block_size;
  // Leave at least the last token to compute: the step that computes it yields the logits.
  const int64_t max_blocks = (static_cast<int64_t>(seq.token_ids.size()) - 1) / bs;
  BlockHash parent = root_block_hash(seq.cache_salt, seq.lora_id);
  if (config_.sliding_window == 0) {
    for (int64_t i = 0; i < max_blocks; ++i) {
      parent = hash_block(parent, seq.token_ids.subspan(i * bs, bs));
      hit.block_hashes.push_back(parent);
      const std::optional<BlockId> block = pool_.lookup(parent);
      if (!block) break;
      hit.blocks.push_back(*block);
    }
    hit.num_tokens = static_cast<int64_t>(hit.blocks.size()) * bs;
    return hit;
  }
  // Sliding window: a hit of L blocks needs blocks [first_block_in_window(L * bs), L) cached
  // (the window of the first position computed after it); the chain hash of block i commits
  // to every token before it, so a cached block i proves the whole prefix even when earlier
  // blocks were evicted. The longest L whose trailing run of cached blocks covers its window.
  std::vector<BlockId> found;
  int64_t run = 0;   // cached blocks ending at block i
  int64_t best = 0;  // the longest valid hit, in blocks
  for (int64_t i = 0; i < max_blocks; ++i) {
    parent = hash_block(parent, seq.token_ids.subspan(i * bs, bs));
    hit.block_hashes.push_back(parent);
    const std::optional<BlockId> block = pool_.lookup(parent);
    found.push_back(block.value_or(kNullBlockId));
    run = block ? run + 1 : 0;
    if (run >= i + 1 - first_block_in_window((i + 1) * bs)) best = i + 1;
  }
  const int64_t first = first_block_in_window(best * bs);
  hit.blocks.assign(found.begin(), found.begin() + best);
  std::fill(hit.blocks.begin(), hit.blocks.begin() + first, kNullBlockId);
  hit.num_tokens = best * bs;
  return hit;
}

void KvManager::release_outside_window(SeqState& state, int64_t num_computed) {
  if (config_.sliding_window == 0) return;
  const int64_t end =
      std::min(first_block_in_window(num_computed), static_cast<int64_t>(state.blocks.size()));
  for (int64_t i = state.num_released_blocks; i < end; ++i) {
    BlockId& b = state.blocks[static_cast<size_t>(i)];
    if (b != kNullBlockId) pool_.free(std::span<const BlockId>(&b, 1));
    b = kNullBlockId;
  }
  state.num_released_blocks = std::max(state.num_released_blocks, end);
}

std::optional<SlotAllocation> KvManager::allocate_slots(const SequenceView& seq,
                                                        int64_t num_new_tokens,
                                                        const PrefixHit* hit,
                                                        int64_t num_lookahead_tokens) {
  PAGODA_CHECK(num_new_tokens >= 0 && num_lookahead_tokens >= 0);
  PAGODA_CHECK(seq.num_computed_tokens >= 0);
  const int32_t bs = config_.block_size;
  auto it = seqs_.find(seq.id);
  const std::vector<BlockId>* table = it == seqs_.end() ? nullptr : &it->second.blocks;
  const int64_t num_table = table == nullptr ? 0 : static_cast<int64_t>(table->size());
  const bool with_hit = hit != nullptr && !hit->blocks.empty();
  if (with_hit) {
    PAGODA_CHECK_MSG(num_table == 0 && seq.num_computed_tokens == 0,
                     "a prefix hit is only taken by a sequence without blocks");
    PAGODA_CHECK(hit->num_tokens == static_cast<int64_t>(hit->blocks.size()) * bs);
  }
  const int64_t num_hit_blocks = with_hit ? static_cast<int64_t>(hit->blocks.size()) : 0;
  const int64_t start = seq.num_computed_tokens + num_hit_blocks * bs;
  const int64_t end = start + num_new_tokens;
  PAGODA_CHECK_MSG(end <= static_cast<int64_t>(seq.token_ids.size()),
                   "allocating slots for tokens the sequence does not have");
  PAGODA_CHECK_MSG(num_blocks_for_tokens(seq.num_computed_tokens) <= num_table,
                   "block table does not cover the computed tokens");
  // Blocks no query from position num_computed_tokens on reads go back to the pool first.
  if (it != seqs_.end()) release_outside_window(it->second, seq.num_computed_tokens);

  const int64_t num_required = num_blocks_for_tokens(end + num_lookahead_tokens);
  const int64_t num_append = std::max<int64_t>(0, num_required - num_table - num_hit_blocks);
  // Existing blocks the new tokens (and lookahead slots, which speculative decoding writes)
  // write into that another sequence also holds: copy-on-write.
  std::vector<int64_t> cow_indices;
  if (num_new_tokens + num_lookahead_tokens > 0 && table != nullptr) {
    const int64_t last = std::min(num_table, num_blocks_for_tokens(end + num_lookahead_tokens));
    for (int64_t i = start / bs; i < last; ++i) {
      if (pool_.ref_count((*table)[i]) > 1) cow_indices.push_back(i);
    }
  }
  // Cached blocks with no holder sit in the free list; reviving them shrinks it.
  int64_t num_revived = 0;
  if (with_hit) {
    for (const BlockId b : hit->blocks)
      num_revived += b != kNullBlockId && pool_.ref_count(b) == 0 ? 1 : 0;
  }
  const int64_t num_needed = num_append + static_cast<int64_t>(cow_indices.size());
  if (num_needed + num_revived > pool_.num_free_blocks()) return std::nullopt;

  SeqState& state = seqs_[seq.id];  // creates the entry for a new sequence
  SlotAllocation out;
  if (with_hit) {
    pool_.touch(held(hit->blocks));
    state.blocks.assign(hit->blocks.begin(), hit->blocks.end());
    state.block_hashes.assign(hit->block_hashes.begin(), hit->block_hashes.end());
    state.num_cached_blocks = num_hit_blocks;
    state.num_released_blocks = first_block_in_window(hit->num_tokens);
  }
  if (hit != nullptr && config_.enable_prefix_caching) {
    prefix_cache_queries_ += static_cast<int64_t>(seq.token_ids.size());
    prefix_cache_hits_ += num_hit_blocks * bs;
  }
  for (const int64_t i : cow_indices) {
    const BlockId src = state.blocks[i];
    const BlockId dst = pool_.allocate_one();
    // Only a block holding computed tokens has data to copy; a shared spare block is replaced.
    if (i * bs < start) {
      out.copies.push_back(BlockCopy{src, dst});
      ++num_cow_copies_;
    }
    state.blocks[i] = dst;
    pool_.free(std::span<const BlockId>(&src, 1));
  }
  const size_t first_new = state.blocks.size();
  pool_.allocate(static_cast<int32_t>(num_append), state.blocks);
  out.new_block_ids.assign(state.blocks.begin() + static_cast<std::ptrdiff_t>(first_new),
                           state.blocks.end());
  return out;
}

void KvManager::cache_blocks(const SequenceView& seq) {
  if (!config_.enable_prefix_caching) return;
  auto it = seqs_.find(seq.id);
  if (it == seqs_.end()) return;
  SeqState& state = it->second;
  const int64_t num_known =
      std::min(seq.num_computed_tokens, static_cast<int64_t>(seq.token_ids.size()));
  const int64_t num_full =
      std::min(num_known / config_.block_size, static_cast<int64_t>(state.blocks.size()));
  if (num_full <= state.num_cached_blocks) return;
  extend_block_hashes(state.block_hashes, seq.token_ids, config_.block_size, num_full,
                      seq.cache_salt, seq.lora_id);
  for (int64_t i = state.num_cached_blocks; i < num_full; ++i) {
    if (state.blocks[i] == kNullBlockId) continue;        // released to the window (never computed)
    pool_.cache(state.blocks[i], state.block_hashes[i]);  // false: a duplicate stays private
  }
  state.num_cached_blocks = num_full;
}

void KvManager::free(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  std::vector<BlockId> blocks = held(it->second.blocks);
  std::reverse(blocks.begin(), blocks.end());
  pool_.free(blocks);
  seqs_.erase(it);
}

void KvManager::trim(SeqId id, int64_t num_blocks) {
  PAGODA_CHECK(num_blocks >= 0);
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  SeqState& state = it->second;
  if (num_blocks >= static_cast<int64_t>(state.blocks.size())) return;
  PAGODA_CHECK_MSG(state.num_cached_blocks <= num_blocks, "trimming a prefix-cached block");
  PAGODA_CHECK_MSG(state.num_released_blocks <= num_blocks, "trimming a released block");
  std::vector<BlockId> tail(state.blocks.begin() + num_blocks, state.blocks.end());
  std::reverse(tail.begin(), tail.end());
  pool_.free(tail);
  state.blocks.resize(static_cast<size_t>(num_blocks));
  if (static_cast<int64_t>(state.block_hashes.size()) > num_blocks) {
    state.block_hashes.resize(static_cast<size_t>(num_blocks));
  }
}

Status KvManager::fork(const SequenceView& parent, SeqId child) {
  auto it = seqs_.find(parent.id);
  if (it == seqs_.end()) return failed_precondition("fork: parent sequence {} unknown", parent.id);
  if (seqs_.count(child) != 0) return failed_precondition("fork: child {} already exists", child);
  const SeqState& p = it->second;
  const int64_t num_shared = num_blocks_for_tokens(parent.num_computed_tokens);
  if (num_shared > static_cast<int64_t>(p.blocks.size())) {
    return failed_precondition("fork: parent {} table does not cover its computed tokens",
                               parent.id);
  }
  const int64_t num_full = std::min<int64_t>(parent.num_computed_tokens / config_.block_size,
                                             static_cast<int64_t>(p.block_hashes.size()));
  SeqState c;
  c.blocks.assign(p.blocks.begin(), p.blocks.begin() + num_shared);
  c.block_hashes.assign(p.block_hashes.begin(), p.block_hashes.begin() + num_full);
  c.num_cached_blocks = std::min(p.num_cached_blocks, num_full);
  c.num_released_blocks = std::min(p.num_released_blocks, num_shared);
  pool_.touch(held(c.blocks));
  seqs_.emplace(child, std::move(c));
  return Status();
}

std::span<const BlockId> KvManager::block_table(SeqId id) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return {};
  return it->second.blocks;
}

KvStats KvManager::stats() const {
  KvStats s;
  s.num_blocks = pool_.num_usable_blocks();
  s.num_used_blocks = pool_.num_used_blocks();
  s.num_free_blocks = pool_.num_free_blocks();
  s.num_cached_blocks = pool_.num_cached_blocks();
  s.usage = s.num_blocks > 0 ? static_cast<double>(s.num_used_blocks) / s.num_blocks : 0.0;
  s.prefix_cache_queries = prefix_cache_queries_;
  s.prefix_cache_hits = prefix_cache_hits_;
  s.num_evictions = pool_.num_evictions();
  s.num_cow_copies = num_cow_copies_;
  return s;
}

int64_t KvManager::reset_prefix_cache() {
  return pool_.reset_prefix_cache();
}

Status KvManager::check_invariants() const {
  PAGODA_RETURN_IF_ERROR(pool_.check_invariants());
  std::vector<int32_t> holders(pool_.num_blocks(), 0);
  std::vector<SeqId> last_holder(pool_.num_blocks(), 0);
  std::vector<uint8_t> seen(pool_.num_blocks(), 0);
  for (const auto& [id, state] : seqs_) {
    if (state.num_released_blocks > 0 && config_.sliding_window == 0) {
      return internal_error("sequence {} released blocks without a sliding window", id);
    }
    for (size_t i = 0; i < state.blocks.size(); ++i) {
      const BlockId b = state.blocks[i];
      const bool released = static_cast<int64_t>(i) < state.num_released_blocks;
      if (released != (b == kNullBlockId)) {
        return internal_error("sequence {} entry {} is block {} but {} released", id, i, b,
                              released ? "was" : "was not");
      }
      if (released) continue;
      if (b <= kNullBlockId || b >= pool_.num_blocks()) {
        return internal_error("sequence {} holds bad block id {}", id, b);
      }
      if (seen[b] && last_holder[b] == id) {
        return internal_error("sequence {} holds block {} twice", id, b);
      }
      seen[b] = 1;
      last_holder[b] = id;
      ++holders[b];
    }
    if (state.num_cached_blocks > static_cast<int64_t>(state.blocks.size())) {
      return internal_error("sequence {} claims {} cached blocks of {}", id,
                            state.num_cached_blocks, state.blocks.size());
    }
  }
  for (BlockId b = 1; b < pool_.num_blocks(); ++b) {
    if (holders[b] != pool_.ref_count(b)) {
      return internal_error("block {} has ref count {} but {} holders", b, pool_.ref_count(b),
                            holders[b]);
    }
  }
  return Status();
}

}  // namespace pagoda::kv
