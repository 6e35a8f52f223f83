// BlockPool: ref counts + intrusive LRU free list + prefix-cache map (see block_pool.h).
#include "kv/block_pool.h"

#include <algorithm>

#include "base/check.h"

namespace pagoda::kv {

BlockPool::BlockPool(int32_t num_blocks)
    : ref_counts_(num_blocks, 0),
      prev_(num_blocks, kNil),
      next_(num_blocks, kNil),
      in_free_list_(num_blocks, 0),
      hashes_(num_blocks),
      has_hash_(num_blocks, 0) {
  PAGODA_CHECK(num_blocks >= 1);
  for (BlockId b = 1; b < num_blocks; ++b)
    push_back(b);
}

void BlockPool::check_id(BlockId block) const {
  PAGODA_CHECK_MSG(block > kNullBlockId && block < num_blocks(), "block id out of range");
}

void BlockPool::unlink(BlockId block) {
  PAGODA_CHECK(in_free_list_[block]);
  const BlockId p = prev_[block];
  const BlockId n = next_[block];
  if (p == kNil) {
    head_ = n;
  } else {
    next_[p] = n;
  }
  if (n == kNil) {
    tail_ = p;
  } else {
    prev_[n] = p;
  }
  prev_[block] = next_[block] = kNil;
  in_free_list_[block] = 0;
  --num_free_;
}

void BlockPool::push_back(BlockId block) {
  PAGODA_CHECK(!in_free_list_[block]);
  prev_[block] = tail_;
  next_[block] = kNil;
  if (tail_ == kNil) {
    head_ = block;
  } else {
    next_[tail_] = block;
  }
  tail_ = block;
  in_free_list_[block] = 1;
  ++num_free_;
}

void BlockPool::drop_hash(BlockId block) {
  if (!has_hash_[block]) return;
  const auto it = hash_to_block_.find(hashes_[block]);
  PAGODA_CHECK(it != hash_to_block_.end() && it->second == block);
  hash_to_block_.erase(it);
  has_hash_[block] = 0;
  hashes_[block] = BlockHash{};
}

BlockId BlockPool::allocate_one() {
  PAGODA_CHECK_MSG(head_ != kNil, "allocate from an empty free list");
  const BlockId block = head_;
  unlink(block);
  if (has_hash_[block]) {  // eviction: the cached contents are about to be overwritten
    drop_hash(block);
    ++num_evictions_;
  }
  ref_counts_[block] = 1;
  return block;
}

void BlockPool::allocate(int32_t n, std::vector<BlockId>& out) {
  PAGODA_CHECK(n >= 0 && n <= num_free_);
  out.reserve(out.size() + n);
  for (int32_t i = 0; i < n; ++i)
    out.push_back(allocate_one());
}

void BlockPool::touch(std::span<const BlockId> blocks) {
  for (const BlockId b : blocks) {
    check_id(b);
    if (ref_counts_[b] == 0) unlink(b);
    ++ref_counts_[b];
  }
}

void BlockPool::free(std::span<const BlockId> blocks) {
  for (const BlockId b : blocks) {
    check_id(b);
    PAGODA_CHECK_MSG(ref_counts_[b] > 0, "double free of a KV block");
    if (--ref_counts_[b] == 0) push_back(b);
  }
}

std::optional<BlockId> BlockPool::lookup(const BlockHash& hash) const {
  const auto it = hash_to_block_.find(hash);
  if (it == hash_to_block_.end()) return std::nullopt;
  return it->second;
}

bool BlockPool::cache(BlockId block, const BlockHash& hash) {
  check_id(block);
  PAGODA_CHECK_MSG(ref_counts_[block] > 0, "caching a free block");
  if (has_hash_[block]) return false;
  const auto [it, inserted] = hash_to_block_.emplace(hash, block);
  if (!inserted) return false;
  hashes_[block] = hash;
  has_hash_[block] = 1;
  return true;
}

int64_t BlockPool::reset_prefix_cache() {
  const auto n = static_cast<int64_t>(hash_to_block_.size());
  hash_to_block_.clear();
  std::fill(has_hash_.begin(), has_hash_.end(), 0);
  std::fill(hashes_.begin(), hashes_.end(), BlockHash{});
  return n;
}

int32_t BlockPool::ref_count(BlockId block) const {
  PAGODA_CHECK(block >= 0 && block < num_blocks());
  return ref_counts_[block];
}

std::optional<BlockHash> BlockPool::block_hash(BlockId block) const {
  PAGODA_CHECK(block >= 0 && block < num_blocks());
  if (!has_hash_[block]) return std::nullopt;
  return hashes_[block];
}

bool BlockPool::is_free(BlockId block) const {
  PAGODA_CHECK(block >= 0 && block < num_blocks());
  return in_free_list_[block] != 0;
}

std::vector<BlockId> BlockPool::free_list() const {
  std::vector<BlockId> out;
  out.reserve(num_free_);
  for (BlockId b = head_; b != kNil; b = next_[b])
    out.push_back(b);
  return out;
}

Status BlockPool::check_invariants() const {
  const int32_t n = num_blocks();
  if (ref_counts_[kNullBlockId] != 0 || in_free_list_[kNullBlockId] || has_hash_[kNullBlockId]) {
    return internal_error("null block 0 is in use, free or cached");
  }
  // Walk the list forwards, checking back links and bounding the walk (no cycles).
  int32_t walked = 0;
  BlockId prev = kNil;
  for (BlockId b = head_; b != kNil; b = next_[b]) {
    if (b <= kNullBlockId || b >= n) return internal_error("free list holds bad id {}", b);
    if (!in_free_list_[b]) return internal_error("block {} linked but not marked free", b);
    if (prev_[b] != prev) return internal_error("block {} has a broken back link", b);
    if (++walked > n) return internal_error("free list has a cycle");
    prev = b;
  }
  if (prev != tail_) return internal_error("free list tail is {}, walk ended at {}", tail_, prev);
  if (walked != num_free_) {
    return internal_error("free list has {} blocks, counter says {}", walked, num_free_);
  }
  int64_t num_hashed = 0;
  for (BlockId b = 1; b < n; ++b) {
    if (ref_counts_[b] < 0) return internal_error("block {} has ref count {}", b, ref_counts_[b]);
    if ((ref_counts_[b] == 0) != (in_free_list_[b] != 0)) {
      return internal_error("block {}: ref count {} but free-list membership {}", b, ref_counts_[b],
                            in_free_list_[b]);
    }
    if (has_hash_[b]) {
      ++num_hashed;
      const auto it = hash_to_block_.find(hashes_[b]);
      if (it == hash_to_block_.end() || it->second != b) {
        return internal_error("block {} has a hash the map does not send to it", b);
      }
    }
  }
  if (num_hashed != static_cast<int64_t>(hash_to_block_.size())) {
    return internal_error("{} blocks have hashes but the map has {} entries", num_hashed,
                          hash_to_block_.size());
  }
  return Status();
}

}  // namespace pagoda::kv
