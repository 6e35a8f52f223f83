// KvManager with layer groups of different windows (KvManagerConfig::group_windows; Gemma 2/3's
// local and global layers, vLLM's KV cache groups): one table per group over one pool, the
// sliding group released behind its window while the full group keeps every block, a prefix hit
// valid in every group (the full group needs the whole prefix, the sliding group its window),
// per-group prefix-cache keys, forks and trims per group.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_manager.h"

namespace pagoda::kv {
namespace {

KvManager make_hybrid(int32_t num_blocks, int32_t block_size, std::vector<int32_t> windows) {
  KvManagerConfig c;
  c.num_blocks = num_blocks;
  c.block_size = block_size;
  c.group_windows = std::move(windows);
  auto m = KvManager::create(c);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

std::vector<TokenId> tokens(int n, TokenId first = 100) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

SequenceView view(SeqId id, const std::vector<TokenId>& t, int64_t computed) {
  return SequenceView{id, t, computed, ""};
}

std::vector<BlockId> table(const KvManager& m, SeqId id, int32_t group) {
  const std::span<const BlockId> t = m.block_table(id, group);
  return {t.begin(), t.end()};
}

TEST(KvHybridWindow, RejectsBadGroupConfigsNamingTheField) {
  KvManagerConfig c;
  c.num_blocks = 8;
  c.group_windows = {0, -3};
  auto a = KvManager::create(c);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("group_windows[1]"), std::string::npos);
  c.group_windows = {0, 4};
  c.sliding_window = 4;
  auto b = KvManager::create(c);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("both set"), std::string::npos);
  c.sliding_window = 0;
  c.group_windows.assign(KvManager::kMaxGroups + 1, 0);
  auto d = KvManager::create(c);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("at most"), std::string::npos);
}

// The figure: a 4,096-token generation (16-token prompt, then one token per step), window
// 512, 16-token blocks. The sliding group holds <= 512/16 + 2 = 34 blocks at every step (null
// entries exactly below its window) while the full group holds every block; the pool is 300
// blocks, less than the 512 both groups would need without release.
TEST(KvHybridWindow, FourKGenerationHoldsTheWindowInTheSlidingGroupOnly) {
  KvManager m = make_hybrid(301, 16, {0, 512});
  EXPECT_EQ(m.num_groups(), 2);
  EXPECT_EQ(m.max_blocks_held(4096, 1), 256 + 33);
  std::vector<TokenId> t = tokens(16);
  ASSERT_TRUE(m.allocate_slots(view(1, t, 0), 16).has_value());
  int64_t peak_sliding = 0;
  for (int64_t c = 16; c < 4096; ++c) {
    t.push_back(static_cast<TokenId>(c % 1000));
    auto a = m.allocate_slots(view(1, t, c), 1);
    ASSERT_TRUE(a.has_value()) << "at " << c;
    ASSERT_EQ(a->other_groups_new_block_ids.size(), 1u);
    EXPECT_EQ(a->other_groups_new_block_ids[0].size(), a->new_block_ids.size());
    const std::vector<BlockId> full = table(m, 1, 0);
    const std::vector<BlockId> sliding = table(m, 1, 1);
    ASSERT_EQ(static_cast<int64_t>(full.size()), m.num_blocks_for_tokens(c + 1));
    ASSERT_EQ(sliding.size(), full.size());
    const int64_t first = m.first_block_in_window(c, 1);
    EXPECT_EQ(m.first_block_in_window(c, 0), 0);
    for (int64_t i = 0; i < static_cast<int64_t>(full.size()); ++i) {
      ASSERT_NE(full[i], kNullBlockId) << "full entry " << i << " at " << c;
      ASSERT_EQ(sliding[i] == kNullBlockId, i < first) << "sliding entry " << i << " at " << c;
    }
    EXPECT_EQ(m.num_held_blocks(1, 0), static_cast<int64_t>(full.size()));
    peak_sliding = std::max(peak_sliding, m.num_held_blocks(1, 1));
    EXPECT_LE(m.num_held_blocks(1), m.max_blocks_held(c + 1, 1));
    EXPECT_EQ(m.pool().num_used_blocks(), m.num_held_blocks(1));
    if (c % 64 == 0 || c == 4095) {
      ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
    }
  }
  EXPECT_LE(peak_sliding, 512 / 16 + 2);
  EXPECT_EQ(m.num_held_blocks(1, 0), 256);
  m.free(1);
  EXPECT_EQ(m.pool().num_free_blocks(), 300);
  EXPECT_TRUE(m.check_invariants().ok());
}

// Prefix caching over two groups (window 6, 4-token blocks): a hit needs every block of the full
// group and the window blocks of the sliding group. Released sliding blocks evicted: the hit
// stands (nulls before the window in the sliding table only). A full-group block evicted: no
// hit past it, although the sliding group's window is cached.
TEST(KvHybridWindow, HitIsTheShortestOverTheGroups) {
  KvManager m = make_hybrid(40, 4, {0, 6});
  std::vector<TokenId> a = tokens(32);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 32).has_value());
  m.cache_blocks(view(1, a, 32));
  const std::vector<BlockId> full_a = table(m, 1, 0);
  const std::vector<BlockId> sliding_a = table(m, 1, 1);
  // Each group caches its own blocks under its own key: no block serves both groups.
  for (size_t i = 0; i < full_a.size(); ++i) {
    ASSERT_TRUE(m.pool().block_hash(full_a[i]).has_value());
    ASSERT_TRUE(m.pool().block_hash(sliding_a[i]).has_value());
    EXPECT_NE(*m.pool().block_hash(full_a[i]), *m.pool().block_hash(sliding_a[i]));
  }
  a.push_back(7);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 32), 1).has_value());  // sliding: releases 0..5
  EXPECT_EQ(m.num_held_blocks(1, 0), 9);
  EXPECT_EQ(m.num_held_blocks(1, 1), 3);
  for (int i = 0; i < 6; ++i)
    EXPECT_TRUE(m.pool().is_free(sliding_a[i]));
  m.free(1);

  // Evict the released sliding blocks 0..5 (the oldest in the free list after 21 unused ones).
  std::vector<TokenId> other = tokens(54, 5000);  // 14 blocks per group
  ASSERT_TRUE(m.allocate_slots(view(2, other, 0), 54).has_value());
  for (int i = 0; i < 6; ++i)
    EXPECT_FALSE(m.pool().block_hash(sliding_a[i]).has_value()) << "block " << i;
  for (const BlockId b : full_a)
    EXPECT_TRUE(m.pool().block_hash(b).has_value());
  m.free(2);

  std::vector<TokenId> c = tokens(32);
  c.push_back(9);
  PrefixHit hit = m.get_computed_blocks(view(3, c, 0));
  EXPECT_EQ(hit.num_tokens, 32);
  ASSERT_EQ(hit.other_groups.size(), 1u);
  EXPECT_EQ(hit.blocks, std::vector<BlockId>(full_a.begin(), full_a.end()));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(hit.other_groups[0][i], kNullBlockId);
  EXPECT_EQ(hit.other_groups[0][6], sliding_a[6]);
  EXPECT_EQ(hit.other_groups[0][7], sliding_a[7]);
  const int32_t free_before = m.pool().num_free_blocks();
  auto alloc = m.allocate_slots(view(3, c, 0), 1, &hit);
  ASSERT_TRUE(alloc.has_value());
  // 8 + 2 revived, one new block per group.
  EXPECT_EQ(m.pool().num_free_blocks(), free_before - 12);
  EXPECT_EQ(m.num_held_blocks(3, 0), 9);
  EXPECT_EQ(m.num_held_blocks(3, 1), 3);
  ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  m.free(3);

  // Now evict full-group block 1 only: the full group cannot hit past block 0, whatever the
  // sliding group holds.
  KvManager n = make_hybrid(40, 4, {0, 6});
  ASSERT_TRUE(n.allocate_slots(view(1, tokens(32), 0), 32).has_value());
  const std::vector<TokenId> a2 = tokens(32);
  n.cache_blocks(view(1, a2, 32));
  const std::vector<BlockId> full_n = table(n, 1, 0);
  n.free(1);  // full group's blocks freed last-first, then the sliding group's
  // Allocate until full block 1 is reused (the free list is LRU: 23 unused blocks first).
  const std::vector<TokenId> filler = tokens(4 * 40, 7000);
  int64_t used = 0;
  while (n.pool().block_hash(full_n[1]).has_value()) {
    ASSERT_TRUE(n.allocate_slots(view(9, filler, used), 4).has_value());
    used += 4;
  }
  std::vector<TokenId> d = tokens(32);
  d.push_back(9);
  hit = n.get_computed_blocks(view(4, d, 0));
  EXPECT_EQ(hit.num_tokens, 4);  // block 0 only (a sliding-only cache would hit 32)
  EXPECT_TRUE(n.check_invariants().ok());
}

// Forks copy every group's table (released entries included), both sides release their sliding
// blocks independently, and a trim drops tail blocks from every group.
TEST(KvHybridWindow, ForkAndTrimPerGroup) {
  KvManager m = make_hybrid(64, 4, {0, 6});
  std::vector<TokenId> p = tokens(22);
  ASSERT_TRUE(m.allocate_slots(view(1, p, 0), 22).has_value());
  p.push_back(1);
  ASSERT_TRUE(m.allocate_slots(view(1, p, 22), 1).has_value());  // sliding: releases 0..3
  EXPECT_EQ(m.num_held_blocks(1, 0), 6);
  EXPECT_EQ(m.num_held_blocks(1, 1), 2);
  ASSERT_TRUE(m.fork(view(1, p, 22), 2).ok());
  EXPECT_EQ(m.num_held_blocks(2, 0), 6);
  EXPECT_EQ(m.num_held_blocks(2, 1), 2);
  ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  std::vector<TokenId> q = p;
  for (int64_t c = 22; c < 40; ++c) {
    p.push_back(2);
    q.push_back(3);
    ASSERT_TRUE(m.allocate_slots(view(1, p, c), 1).has_value());
    ASSERT_TRUE(m.allocate_slots(view(2, q, c), 1).has_value());
    ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  }
  EXPECT_EQ(m.num_held_blocks(1, 0), 10);
  EXPECT_LE(m.num_held_blocks(1, 1), 3);
  EXPECT_LE(m.num_held_blocks(2, 1), 3);
  // Lookahead slots for 8 drafts, then rolled back to the blocks of 41 tokens.
  ASSERT_TRUE(m.allocate_slots(view(1, p, 40), 0, nullptr, 8).has_value());
  EXPECT_EQ(table(m, 1, 0).size(), 12u);
  EXPECT_EQ(table(m, 1, 1).size(), 12u);
  m.trim(1, 11);
  EXPECT_EQ(table(m, 1, 0).size(), 11u);
  EXPECT_EQ(table(m, 1, 1).size(), 11u);
  ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  m.free(1);
  m.free(2);
  EXPECT_EQ(m.pool().num_free_blocks(), 63);
  EXPECT_TRUE(m.check_invariants().ok());
}

}  // namespace
}  // namespace pagoda::kv
