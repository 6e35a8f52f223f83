// BlockPool: LRU free-list order, O(1) revival, eviction of cached hashes, and a randomised
// comparison against a naive model (std::list free list + std::map cache).
#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <map>
#include <random>
#include <vector>

namespace pagoda::kv {
namespace {

BlockHash key(uint64_t i) {
  return BlockHash{i * 0x9e3779b97f4a7c15ull + 1, i};
}

std::vector<BlockId> iota(BlockId from, BlockId to) {
  std::vector<BlockId> v;
  for (BlockId b = from; b < to; ++b)
    v.push_back(b);
  return v;
}

TEST(BlockPool, StartsWithEveryBlockButTheNullOneFree) {
  BlockPool pool(8);
  EXPECT_EQ(pool.num_blocks(), 8);
  EXPECT_EQ(pool.num_usable_blocks(), 7);
  EXPECT_EQ(pool.num_free_blocks(), 7);
  EXPECT_EQ(pool.free_list(), iota(1, 8));
  EXPECT_FALSE(pool.is_free(kNullBlockId));
  EXPECT_EQ(pool.ref_count(kNullBlockId), 0);
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPool, AllocatesFromTheHeadAndFreesToTheTail) {
  BlockPool pool(8);
  std::vector<BlockId> got;
  pool.allocate(3, got);
  EXPECT_EQ(got, (std::vector<BlockId>{1, 2, 3}));
  for (const BlockId b : got)
    EXPECT_EQ(pool.ref_count(b), 1);
  EXPECT_EQ(pool.num_used_blocks(), 3);
  const std::vector<BlockId> back = {3, 1};
  pool.free(back);
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{4, 5, 6, 7, 3, 1}));
  EXPECT_EQ(pool.allocate_one(), 4);
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPool, TouchRevivesAFreeBlockFromTheMiddle) {
  BlockPool pool(6);
  std::vector<BlockId> all;
  pool.allocate(5, all);
  ASSERT_TRUE(pool.cache(3, key(3)));
  pool.free(all);  // free list 1..5, block 3 keeps its hash
  const BlockId mid = 3;
  pool.touch(std::span<const BlockId>(&mid, 1));
  EXPECT_EQ(pool.ref_count(3), 1);
  EXPECT_FALSE(pool.is_free(3));
  EXPECT_EQ(pool.free_list(), (std::vector<BlockId>{1, 2, 4, 5}));
  EXPECT_EQ(pool.lookup(key(3)), std::optional<BlockId>(3));  // still cached while in use
  // Touching a used block only adds a reference.
  pool.touch(std::span<const BlockId>(&mid, 1));
  EXPECT_EQ(pool.ref_count(3), 2);
  pool.free(std::span<const BlockId>(&mid, 1));
  EXPECT_EQ(pool.ref_count(3), 1);
  EXPECT_FALSE(pool.is_free(3));
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPool, ReusingACachedBlockEvictsItsHash) {
  BlockPool pool(3);
  const BlockId a = pool.allocate_one();
  const BlockId b = pool.allocate_one();
  ASSERT_TRUE(pool.cache(a, key(1)));
  ASSERT_TRUE(pool.cache(b, key(2)));
  EXPECT_EQ(pool.num_cached_blocks(), 2);
  pool.free(std::vector<BlockId>{b, a});  // b evicted first
  EXPECT_EQ(pool.lookup(key(1)), std::optional<BlockId>(a));
  EXPECT_EQ(pool.allocate_one(), b);
  EXPECT_FALSE(pool.lookup(key(2)).has_value());
  EXPECT_FALSE(pool.block_hash(b).has_value());
  EXPECT_EQ(pool.lookup(key(1)), std::optional<BlockId>(a));
  EXPECT_EQ(pool.num_evictions(), 1);
  EXPECT_TRUE(pool.check_invariants().ok());
}

TEST(BlockPool, OneBlockPerHash) {
  BlockPool pool(4);
  const BlockId a = pool.allocate_one();
  const BlockId b = pool.allocate_one();
  EXPECT_TRUE(pool.cache(a, key(7)));
  EXPECT_FALSE(pool.cache(b, key(7)));  // duplicate content stays private
  EXPECT_FALSE(pool.cache(a, key(8)));  // a block keeps its first key
  EXPECT_FALSE(pool.block_hash(b).has_value());
  EXPECT_EQ(pool.lookup(key(7)), std::optional<BlockId>(a));
  EXPECT_EQ(pool.reset_prefix_cache(), 1);
  EXPECT_FALSE(pool.lookup(key(7)).has_value());
  EXPECT_TRUE(pool.check_invariants().ok());
}

// Naive model: the free list as a std::list, the cache as a std::map.
struct NaivePool {
  explicit NaivePool(int32_t n) : ref(n, 0), hash_of(n) {
    for (BlockId b = 1; b < n; ++b)
      free.push_back(b);
  }
  BlockId allocate() {
    const BlockId b = free.front();
    free.pop_front();
    if (hash_of[b]) {
      cache.erase(*hash_of[b]);
      hash_of[b].reset();
    }
    ref[b] = 1;
    return b;
  }
  void touch(BlockId b) {
    if (ref[b]++ == 0) free.remove(b);
  }
  void release(BlockId b) {
    if (--ref[b] == 0) free.push_back(b);
  }
  bool put(BlockId b, uint64_t k) {
    if (hash_of[b] || cache.count(k)) return false;
    cache[k] = b;
    hash_of[b] = k;
    return true;
  }
  std::vector<int32_t> ref;
  std::vector<std::optional<uint64_t>> hash_of;
  std::list<BlockId> free;
  std::map<uint64_t, BlockId> cache;
};

TEST(BlockPool, RandomOperationsMatchANaiveModel) {
  for (uint32_t seed = 0; seed < 40; ++seed) {
    std::mt19937 rng(seed);
    const int32_t n = 2 + static_cast<int32_t>(rng() % 30);
    BlockPool pool(n);
    NaivePool model(n);
    std::vector<BlockId> held;  // one entry per reference we hold
    for (int op = 0; op < 2000; ++op) {
      switch (rng() % 5) {
        case 0:
          if (pool.num_free_blocks() > 0) {
            const BlockId b = pool.allocate_one();
            ASSERT_EQ(b, model.allocate()) << "seed " << seed << " op " << op;
            held.push_back(b);
          }
          break;
        case 1:  // touch a random block (used or cached-free) the way a prefix hit does
          if (!held.empty() || pool.num_cached_blocks() > 0) {
            const BlockId b = 1 + static_cast<BlockId>(rng() % (n - 1));
            if (pool.ref_count(b) > 0 || pool.block_hash(b)) {
              pool.touch(std::span<const BlockId>(&b, 1));
              model.touch(b);
              held.push_back(b);
            }
          }
          break;
        case 2:
        case 3:
          if (!held.empty()) {
            const size_t i = rng() % held.size();
            const BlockId b = held[i];
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
            pool.free(std::span<const BlockId>(&b, 1));
            model.release(b);
          }
          break;
        case 4:
          if (!held.empty()) {
            const BlockId b = held[rng() % held.size()];
            const uint64_t k = rng() % 16;
            ASSERT_EQ(pool.cache(b, key(k)), model.put(b, k));
          }
          break;
      }
      ASSERT_TRUE(pool.check_invariants().ok()) << pool.check_invariants().to_string();
      ASSERT_EQ(pool.free_list(), std::vector<BlockId>(model.free.begin(), model.free.end()));
      for (BlockId b = 0; b < n; ++b)
        ASSERT_EQ(pool.ref_count(b), model.ref[b]);
      for (uint64_t k = 0; k < 16; ++k) {
        const auto it = model.cache.find(k);
        ASSERT_EQ(pool.lookup(key(k)),
                  it == model.cache.end() ? std::nullopt : std::optional<BlockId>(it->second));
      }
    }
    pool.free(held);
    EXPECT_EQ(pool.num_free_blocks(), n - 1);
    EXPECT_TRUE(pool.check_invariants().ok());
  }
}

}  // namespace
}  // namespace pagoda::kv
