// KvManager: block tables, prefix-cache lookups and copy-on-write over a BlockPool.
#include "kv/kv_manager.h"

#include <algorithm>

#include "base/check.h"
#include "kv/block_hash.h"

namespace pagoda::kv {

namespace {
constexpr int32_t kMaxBlockSize = 1 << 16;
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
  return KvManager(config);
}

KvManager::KvManager(const KvManagerConfig& config) : config_(config), pool_(config.num_blocks) {}

int64_t KvManager::num_blocks_for_tokens(int64_t num_tokens) const {
  PAGODA_CHECK(num_tokens >= 0);
  return num_tokens / config_.block_size + (num_tokens % config_.block_size != 0 ? 1 : 0);
}

PrefixHit KvManager::get_computed_blocks(const SequenceView& seq) const {
  PrefixHit hit;
  if (!config_.enable_prefix_caching || seq.token_ids.empty()) return hit;
  const int32_t bs = config_.block_size;
  // Leave at least the last token to compute: the step that computes it yields the logits.
  const int64_t max_blocks = (static_cast<int64_t>(seq.token_ids.size()) - 1) / bs;
  BlockHash parent = root_block_hash(seq.cache_salt, seq.lora_id);
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
      num_revived += pool_.ref_count(b) == 0 ? 1 : 0;
  }
  const int64_t num_needed = num_append + static_cast<int64_t>(cow_indices.size());
  if (num_needed + num_revived > pool_.num_free_blocks()) return std::nullopt;

  SeqState& state = seqs_[seq.id];  // creates the entry for a new sequence
  SlotAllocation out;
  if (with_hit) {
    pool_.touch(hit->blocks);
    state.blocks.assign(hit->blocks.begin(), hit->blocks.end());
    state.block_hashes.assign(hit->block_hashes.begin(), hit->block_hashes.end());
    state.num_cached_blocks = num_hit_blocks;
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
    pool_.cache(state.blocks[i], state.block_hashes[i]);  // false: a duplicate stays private
  }
  state.num_cached_blocks = num_full;
}

void KvManager::free(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  std::vector<BlockId>& blocks = it->second.blocks;
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
  pool_.touch(c.blocks);
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
    for (const BlockId b : state.blocks) {
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
