// KvManager: block tables, prefix-cache lookups and copy-on-write over a BlockPool.
#include "kv/kv_manager.h"

#include <algorithm>
#include <utility>

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
  if (config.group_windows.size() > static_cast<size_t>(kMaxGroups)) {
    return invalid_argument("kv group_windows has {} groups, at most {}",
                            config.group_windows.size(), kMaxGroups);
  }
  if (!config.group_windows.empty() && config.sliding_window != 0) {
    return invalid_argument("kv sliding_window ({}) and group_windows are both set",
                            config.sliding_window);
  }
  for (size_t g = 0; g < config.group_windows.size(); ++g) {
    const int32_t w = config.group_windows[g];
    if (w < 0 || w > kMaxSlidingWindow) {
      return invalid_argument("kv group_windows[{}] must be in [0, {}], got {}", g,
                              kMaxSlidingWindow, w);
    }
  }
  return KvManager(config);
}

KvManager::KvManager(const KvManagerConfig& config)
    : config_(config),
      windows_(config.group_windows.empty() ? std::vector<int32_t>{config.sliding_window}
                                            : config.group_windows),
      pool_(config.num_blocks) {}

BlockHash KvManager::group_key(const BlockHash& hash, int32_t group) {
  if (group == 0) return hash;
  // A block of no tokens under (tag, group): another chain step, so keys of different groups
  // (and of group 0's chain) are as distinct as any two chain hashes.
  const uint64_t extra[2] = {0x67726f75704b5600ull, static_cast<uint64_t>(group)};
  return hash_block(hash, {}, extra);
}

int64_t KvManager::num_blocks_for_tokens(int64_t num_tokens) const {
  PAGODA_CHECK(num_tokens >= 0);
  return num_tokens / config_.block_size + (num_tokens % config_.block_size != 0 ? 1 : 0);
}

int64_t KvManager::first_block_in_window(int64_t pos, int32_t group) const {
  const int32_t w = group_window(group);
  if (w == 0) return 0;
  return std::max<int64_t>(0, pos - w + 1) / config_.block_size;
}

int64_t KvManager::max_blocks_held(int64_t num_tokens, int64_t max_step_tokens) const {
  PAGODA_CHECK(max_step_tokens >= 0);
  const int64_t all = num_blocks_for_tokens(num_tokens);
  int64_t total = 0;
  for (const int32_t w : windows_) {
    // A step computing [c, c + n) reads positions [c - window + 1, c + n): a span of
    // window - 1 + n positions, which touches at most ceil(span / block_size) + 1 blocks.
    total += w == 0 ? all : std::min(all, num_blocks_for_tokens(w - 1 + max_step_tokens) + 1);
  }
  return total;
}

int64_t KvManager::num_held_blocks(SeqId id, int32_t group) const {
  const std::span<const BlockId> table = block_table(id, group);
  return static_cast<int64_t>(
      std::count_if(table.begin(), table.end(), [](BlockId b) { return b != kNullBlockId; }));
}

int64_t KvManager::num_held_blocks(SeqId id) const {
  int64_t n = 0;
  for (int32_t g = 0; g < num_groups(); ++g)
    n += num_held_blocks(id, g);
  return n;
}

PrefixHit KvManager::get_computed_blocks(const SequenceView& seq) const {
  PrefixHit hit;
  const size_t num_groups = windows_.size();
  hit.other_groups.resize(num_groups - 1);
  if (!config_.enable_prefix_caching || seq.token_ids.empty()) return hit;
  const int32_t bs = config_.block_size;
  // Leave at least the last token to compute: the step that computes it yields the logits.
  const int64_t max_blocks = (static_cast<int64_t>(seq.token_ids.size()) - 1) / bs;
  BlockHash parent = root_block_hash(seq.cache_salt, seq.lora_id);
  // Per group, a hit of L blocks needs blocks [first_block_in_window(L * bs), L) cached (the
  // window of the first position computed after it: every block without a window); the chain
  // hash of block i commits to every token before it, so a cached block i proves the whole
  // prefix even when earlier blocks were evicted. The hit is the longest L valid in every group.
  std::vector<std::vector<BlockId>> found(num_groups);
  std::vector<int64_t> run(num_groups, 0);  // cached blocks ending at block i, per group
  int64_t best = 0;                         // the longest valid hit, in blocks
  for (int64_t i = 0; i < max_blocks; ++i) {
    parent = hash_block(parent, seq.token_ids.subspan(i * bs, bs));
    hit.block_hashes.push_back(parent);
    bool valid = true;
    bool dead = false;  // a full-attention group missed a block: no longer hit can be valid
    for (size_t g = 0; g < num_groups; ++g) {
      const int32_t group = static_cast<int32_t>(g);
      const std::optional<BlockId> block = pool_.lookup(group_key(parent, group));
      found[g].push_back(block.value_or(kNullBlockId));
      run[g] = block ? run[g] + 1 : 0;
      valid = valid && run[g] >= i + 1 - first_block_in_window((i + 1) * bs, group);
      dead = dead || (!block && windows_[g] == 0);
    }
    if (dead) break;
    if (valid) best = i + 1;
  }
  for (size_t g = 0; g < num_groups; ++g) {
    std::vector<BlockId>& out = g == 0 ? hit.blocks : hit.other_groups[g - 1];
    out.assign(found[g].begin(), found[g].begin() + best);
    const int64_t first = first_block_in_window(best * bs, static_cast<int32_t>(g));
    std::fill(out.begin(), out.begin() + first, kNullBlockId);
  }
  hit.num_tokens = best * bs;
  return hit;
}

void KvManager::release_outside_window(SeqState& state, int64_t num_computed) {
  for (size_t g = 0; g < state.groups.size(); ++g) {
    if (windows_[g] == 0) continue;
    GroupTable& t = state.groups[g];
    const int64_t end = std::min(first_block_in_window(num_computed, static_cast<int32_t>(g)),
                                 static_cast<int64_t>(t.blocks.size()));
    for (int64_t i = t.num_released_blocks; i < end; ++i) {
      BlockId& b = t.blocks[static_cast<size_t>(i)];
      if (b != kNullBlockId) pool_.free(std::span<const BlockId>(&b, 1));
      b = kNullBlockId;
    }
    t.num_released_blocks = std::max(t.num_released_blocks, end);
  }
}

std::optional<SlotAllocation> KvManager::allocate_slots(const SequenceView& seq,
                                                        int64_t num_new_tokens,
                                                        const PrefixHit* hit,
                                                        int64_t num_lookahead_tokens) {
  PAGODA_CHECK(num_new_tokens >= 0 && num_lookahead_tokens >= 0);
  PAGODA_CHECK(seq.num_computed_tokens >= 0);
  const int32_t bs = config_.block_size;
  const size_t num_groups = windows_.size();
  auto it = seqs_.find(seq.id);
  const SeqState* existing = it == seqs_.end() ? nullptr : &it->second;
  const int64_t num_table =
      existing == nullptr ? 0 : static_cast<int64_t>(existing->groups[0].blocks.size());
  const bool with_hit = hit != nullptr && !hit->blocks.empty();
  if (with_hit) {
    PAGODA_CHECK_MSG(num_table == 0 && seq.num_computed_tokens == 0,
                     "a prefix hit is only taken by a sequence without blocks");
    PAGODA_CHECK(hit->num_tokens == static_cast<int64_t>(hit->blocks.size()) * bs);
    PAGODA_CHECK(hit->other_groups.size() == num_groups - 1);
    for (const std::vector<BlockId>& g : hit->other_groups)
      PAGODA_CHECK(g.size() == hit->blocks.size());
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
  // write into that another sequence also holds: copy-on-write. (group, entry) pairs.
  std::vector<std::pair<size_t, int64_t>> cow;
  if (num_new_tokens + num_lookahead_tokens > 0 && existing != nullptr) {
    const int64_t last = std::min(num_table, num_blocks_for_tokens(end + num_lookahead_tokens));
    for (size_t g = 0; g < num_groups; ++g) {
      for (int64_t i = start / bs; i < last; ++i) {
        if (pool_.ref_count(existing->groups[g].blocks[i]) > 1) cow.emplace_back(g, i);
      }
    }
  }
  // Cached blocks with no holder sit in the free list; reviving them shrinks it.
  int64_t num_revived = 0;
  if (with_hit) {
    for (size_t g = 0; g < num_groups; ++g) {
      for (const BlockId b : g == 0 ? hit->blocks : hit->other_groups[g - 1])
        num_revived += b != kNullBlockId && pool_.ref_count(b) == 0 ? 1 : 0;
    }
  }
  const int64_t num_needed =
      num_append * static_cast<int64_t>(num_groups) + static_cast<int64_t>(cow.size());
  if (num_needed + num_revived > pool_.num_free_blocks()) return std::nullopt;

  SeqState& state = seqs_[seq.id];  // creates the entry for a new sequence
  state.groups.resize(num_groups);
  SlotAllocation out;
  out.other_groups_new_block_ids.resize(num_groups - 1);
  if (with_hit) {
    for (size_t g = 0; g < num_groups; ++g) {
      const std::vector<BlockId>& blocks = g == 0 ? hit->blocks : hit->other_groups[g - 1];
      pool_.touch(held(blocks));
      state.groups[g].blocks.assign(blocks.begin(), blocks.end());
      state.groups[g].num_released_blocks =
          first_block_in_window(hit->num_tokens, static_cast<int32_t>(g));
    }
    state.block_hashes.assign(hit->block_hashes.begin(), hit->block_hashes.end());
    state.num_cached_blocks = num_hit_blocks;
  }
  if (hit != nullptr && config_.enable_prefix_caching) {
    prefix_cache_queries_ += static_cast<int64_t>(seq.token_ids.size());
    prefix_cache_hits_ += num_hit_blocks * bs;
  }
  for (const auto& [g, i] : cow) {
    BlockId& entry = state.groups[g].blocks[i];
    const BlockId src = entry;
    const BlockId dst = pool_.allocate_one();
    // Only a block holding computed tokens has data to copy; a shared spare block is replaced.
    if (i * bs < start) {
      out.copies.push_back(BlockCopy{src, dst});
      ++num_cow_copies_;
    }
    entry = dst;
    pool_.free(std::span<const BlockId>(&src, 1));
  }
  for (size_t g = 0; g < num_groups; ++g) {
    std::vector<BlockId>& table = state.groups[g].blocks;
    const size_t first_new = table.size();
    pool_.allocate(static_cast<int32_t>(num_append), table);
    std::vector<BlockId>& fresh =
        g == 0 ? out.new_block_ids : out.other_groups_new_block_ids[g - 1];
    fresh.assign(table.begin() + static_cast<std::ptrdiff_t>(first_new), table.end());
  }
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
      std::min(num_known / config_.block_size, static_cast<int64_t>(state.groups[0].blocks.size()));
  if (num_full <= state.num_cached_blocks) return;
  extend_block_hashes(state.block_hashes, seq.token_ids, config_.block_size, num_full,
                      seq.cache_salt, seq.lora_id);
  for (size_t g = 0; g < state.groups.size(); ++g) {
    const std::vector<BlockId>& blocks = state.groups[g].blocks;
    for (int64_t i = state.num_cached_blocks; i < num_full; ++i) {
      if (blocks[i] == kNullBlockId) continue;  // released to the window (never computed)
      // false: a duplicate stays private
      pool_.cache(blocks[i], group_key(state.block_hashes[i], static_cast<int32_t>(g)));
    }
  }
  state.num_cached_blocks = num_full;
}

void KvManager::free(SeqId id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  for (const GroupTable& t : it->second.groups) {
    std::vector<BlockId> blocks = held(t.blocks);
    std::reverse(blocks.begin(), blocks.end());
    pool_.free(blocks);
  }
  seqs_.erase(it);
}

void KvManager::trim(SeqId id, int64_t num_blocks) {
  PAGODA_CHECK(num_blocks >= 0);
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  SeqState& state = it->second;
  if (num_blocks >= static_cast<int64_t>(state.groups[0].blocks.size())) return;
  PAGODA_CHECK_MSG(state.num_cached_blocks <= num_blocks, "trimming a prefix-cached block");
  for (GroupTable& t : state.groups) {
    PAGODA_CHECK_MSG(t.num_released_blocks <= num_blocks, "trimming a released block");
    std::vector<BlockId> tail(t.blocks.begin() + num_blocks, t.blocks.end());
    std::reverse(tail.begin(), tail.end());
    pool_.free(tail);
    t.blocks.resize(static_cast<size_t>(num_blocks));
  }
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
  if (num_shared > static_cast<int64_t>(p.groups[0].blocks.size())) {
    return failed_precondition("fork: parent {} table does not cover its computed tokens",
                               parent.id);
  }
  const int64_t num_full = std::min<int64_t>(parent.num_computed_tokens / config_.block_size,
                                             static_cast<int64_t>(p.block_hashes.size()));
  SeqState c;
  c.groups.resize(p.groups.size());
  for (size_t g = 0; g < p.groups.size(); ++g) {
    c.groups[g].blocks.assign(p.groups[g].blocks.begin(), p.groups[g].blocks.begin() + num_shared);
    c.groups[g].num_released_blocks = std::min(p.groups[g].num_released_blocks, num_shared);
    pool_.touch(held(c.groups[g].blocks));
  }
  c.block_hashes.assign(p.block_hashes.begin(), p.block_hashes.begin() + num_full);
  c.num_cached_blocks = std::min(p.num_cached_blocks, num_full);
  seqs_.emplace(child, std::move(c));
  return Status();
}

std::span<const BlockId> KvManager::block_table(SeqId id, int32_t group) const {
  auto it = seqs_.find(id);
  if (it == seqs_.end() || group < 0 || group >= num_groups()) return {};
  return it->second.groups[static_cast<size_t>(group)].blocks;
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
    if (state.groups.size() != windows_.size()) {
      return internal_error("sequence {} has {} tables for {} groups", id, state.groups.size(),
                            windows_.size());
    }
    for (size_t g = 0; g < state.groups.size(); ++g) {
      const GroupTable& t = state.groups[g];
      if (t.blocks.size() != state.groups[0].blocks.size()) {
        return internal_error("sequence {} group {} table has {} entries, group 0 {}", id, g,
                              t.blocks.size(), state.groups[0].blocks.size());
      }
      if (t.num_released_blocks > 0 && windows_[g] == 0) {
        return internal_error("sequence {} group {} released blocks without a sliding window", id,
                              g);
      }
      for (size_t i = 0; i < t.blocks.size(); ++i) {
        const BlockId b = t.blocks[i];
        const bool released = static_cast<int64_t>(i) < t.num_released_blocks;
        if (released != (b == kNullBlockId)) {
          return internal_error("sequence {} group {} entry {} is block {} but {} released", id, g,
                                i, b, released ? "was" : "was not");
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
    }
    if (state.num_cached_blocks > static_cast<int64_t>(state.groups[0].blocks.size())) {
      return internal_error("sequence {} claims {} cached blocks of {}", id,
                            state.num_cached_blocks, state.groups[0].blocks.size());
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
