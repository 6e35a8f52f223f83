// KvManager with a sliding window on every layer: blocks behind the window of the next computed
// position go back to the pool (their table entries become the null block), a long generation
// holds a bounded number of blocks, released blocks stay in the prefix cache, and a prefix hit
// needs only the blocks inside the window of its first uncomputed position (evicted earlier
// blocks are skipped; a missing window block shortens the hit).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "kv/kv_manager.h"

namespace pagoda::kv {
namespace {

KvManager make(int32_t num_blocks, int32_t block_size, int32_t window, bool caching = true) {
  auto m = KvManager::create(KvManagerConfig{num_blocks, block_size, caching, window});
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

TEST(KvSlidingWindow, RejectsANegativeWindowNamingTheField) {
  auto m = KvManager::create(KvManagerConfig{8, 16, true, -1});
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("sliding_window"), std::string::npos);
}

TEST(KvSlidingWindow, FirstBlockInWindowAndTheBound) {
  const KvManager m = make(8, 4, 6);
  // A query at p reads [p - 5, p].
  EXPECT_EQ(m.first_block_in_window(0), 0);
  EXPECT_EQ(m.first_block_in_window(8), 0);   // reads 3..8
  EXPECT_EQ(m.first_block_in_window(9), 1);   // reads 4..9
  EXPECT_EQ(m.first_block_in_window(32), 6);  // reads 27..32
  // One token per step: the window's 6 positions span at most 3 blocks; all of them for short
  // sequences.
  EXPECT_EQ(m.max_blocks_held(5, 1), 2);
  EXPECT_EQ(m.max_blocks_held(1000, 1), 3);
  EXPECT_EQ(m.max_blocks_held(1000, 8), 5);  // [c - 5, c + 8): 13 positions
  const KvManager full = make(8, 4, 0);
  EXPECT_EQ(full.first_block_in_window(32), 0);
  EXPECT_EQ(full.max_blocks_held(1000, 1), 250);
}

// Decoding one token at a time: every block wholly behind the window is released when the
// next position is allocated, the table keeps its length with null entries, and the sequence
// never holds more than max_blocks_held.
TEST(KvSlidingWindow, DecodingReleasesBlocksBehindTheWindow) {
  KvManager m = make(8, 4, 6);  // 7 usable blocks: far fewer than 200 tokens need
  std::vector<TokenId> t = tokens(3);
  ASSERT_TRUE(m.allocate_slots(view(1, t, 0), 3).has_value());
  for (int64_t c = 3; c < 200; ++c) {
    t.push_back(static_cast<TokenId>(c));
    auto a = m.allocate_slots(view(1, t, c), 1);
    ASSERT_TRUE(a.has_value()) << "at " << c;
    const std::span<const BlockId> table = m.block_table(1);
    ASSERT_EQ(static_cast<int64_t>(table.size()), m.num_blocks_for_tokens(c + 1));
    const int64_t first = m.first_block_in_window(c);
    for (int64_t i = 0; i < static_cast<int64_t>(table.size()); ++i) {
      EXPECT_EQ(table[i] == kNullBlockId, i < first) << "entry " << i << " at " << c;
    }
    EXPECT_LE(m.num_held_blocks(1), m.max_blocks_held(c + 1, 1));
    EXPECT_EQ(m.pool().num_used_blocks(), m.num_held_blocks(1));
    ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  }
  m.free(1);
  EXPECT_EQ(m.pool().num_free_blocks(), 7);
  EXPECT_TRUE(m.check_invariants().ok());
}

// A released block keeps its hash: a later request with the same tokens hits the window blocks
// even after the blocks before the window were evicted (a plain prefix cache would miss at
// block 0).
TEST(KvSlidingWindow, HitSkipsEvictedBlocksBeforeTheWindow) {
  KvManager m = make(20, 4, 6);  // 19 usable
  std::vector<TokenId> a = tokens(32);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 32).has_value());
  m.cache_blocks(view(1, a, 32));
  const std::vector<BlockId> blocks_a(m.block_table(1).begin(), m.block_table(1).end());
  a.push_back(7);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 32), 1).has_value());  // releases blocks 0..5
  EXPECT_EQ(m.num_held_blocks(1), 3);
  for (int i = 0; i < 6; ++i) {
    EXPECT_TRUE(m.pool().is_free(blocks_a[i]));
    EXPECT_TRUE(m.pool().block_hash(blocks_a[i]).has_value()) << "released block " << i;
  }
  m.free(1);
  // 10 never-used blocks, then A's released blocks 0..5 in release order, then A's others.
  std::vector<TokenId> other = tokens(64, 5000);
  ASSERT_TRUE(m.allocate_slots(view(2, other, 0), 64).has_value());  // 16 blocks: evicts 0..5
  for (int i = 0; i < 6; ++i)
    EXPECT_FALSE(m.pool().block_hash(blocks_a[i]).has_value()) << "block " << i;

  std::vector<TokenId> c = tokens(32);
  c.push_back(9);
  const PrefixHit hit = m.get_computed_blocks(view(3, c, 0));
  EXPECT_EQ(hit.num_tokens, 32);  // position 32 reads 27..32: blocks 6 and 7
  ASSERT_EQ(hit.blocks.size(), 8u);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(hit.blocks[i], kNullBlockId);
  EXPECT_EQ(hit.blocks[6], blocks_a[6]);
  EXPECT_EQ(hit.blocks[7], blocks_a[7]);
  const int32_t free_before = m.pool().num_free_blocks();
  auto alloc = m.allocate_slots(view(3, c, 0), 1, &hit);
  ASSERT_TRUE(alloc.has_value());
  EXPECT_EQ(alloc->new_block_ids.size(), 1u);
  EXPECT_EQ(m.pool().num_free_blocks(), free_before - 3);  // two revived, one new
  EXPECT_EQ(m.num_held_blocks(3), 3);
  EXPECT_EQ(m.pool().ref_count(blocks_a[6]), 1);
  ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
}

// A block inside the window of the would-be hit position is missing: the hit is shortened to
// the longest prefix whose own window is still cached.
TEST(KvSlidingWindow, MissingWindowBlockShortensTheHit) {
  KvManager m = make(20, 4, 6);
  const std::vector<TokenId> a = tokens(32);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 32).has_value());
  m.cache_blocks(view(1, a, 32));
  const std::vector<BlockId> blocks_a(m.block_table(1).begin(), m.block_table(1).end());
  m.free(1);  // last block first: block 7 is evicted first among A's
  std::vector<TokenId> c = tokens(32);
  c.push_back(9);
  EXPECT_EQ(m.get_computed_blocks(view(3, c, 0)).num_tokens, 32);

  const std::vector<TokenId> other = tokens(48, 5000);
  ASSERT_TRUE(m.allocate_slots(view(2, other, 0), 48).has_value());  // 11 unused, then 7
  EXPECT_FALSE(m.pool().block_hash(blocks_a[7]).has_value());
  PrefixHit hit = m.get_computed_blocks(view(3, c, 0));
  EXPECT_EQ(hit.num_tokens, 28);  // position 28 reads 23..28: blocks 5 and 6
  ASSERT_EQ(hit.blocks.size(), 7u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(hit.blocks[i], kNullBlockId);
  EXPECT_EQ(hit.blocks[5], blocks_a[5]);
  EXPECT_EQ(hit.blocks[6], blocks_a[6]);

  std::vector<TokenId> more = tokens(4, 9000);
  ASSERT_TRUE(m.allocate_slots(view(4, more, 0), 4).has_value());  // evicts 6
  hit = m.get_computed_blocks(view(3, c, 0));
  EXPECT_EQ(hit.num_tokens, 24);
  EXPECT_EQ(hit.blocks[4], blocks_a[4]);
  EXPECT_EQ(hit.blocks[5], blocks_a[5]);
  EXPECT_TRUE(m.check_invariants().ok());
}

// Forks share the parent's table, released entries included; each side's later releases and
// copy-on-write keep the ref counts exact.
TEST(KvSlidingWindow, ForkSharesReleasedTablesAndBothSidesRelease) {
  KvManager m = make(16, 4, 6);
  std::vector<TokenId> p = tokens(22);
  ASSERT_TRUE(m.allocate_slots(view(1, p, 0), 22).has_value());
  p.push_back(1);
  ASSERT_TRUE(m.allocate_slots(view(1, p, 22), 1).has_value());  // releases blocks 0..3
  EXPECT_EQ(m.num_held_blocks(1), 2);
  ASSERT_TRUE(m.fork(view(1, p, 22), 2).ok());
  EXPECT_EQ(m.num_held_blocks(2), 2);
  EXPECT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  std::vector<TokenId> q = p;
  for (int64_t c = 22; c < 40; ++c) {
    p.push_back(2);
    q.push_back(3);
    ASSERT_TRUE(m.allocate_slots(view(1, p, c), 1).has_value());
    ASSERT_TRUE(m.allocate_slots(view(2, q, c), 1).has_value());
    ASSERT_TRUE(m.check_invariants().ok()) << m.check_invariants().to_string();
  }
  EXPECT_LE(m.num_held_blocks(1), 3);
  EXPECT_LE(m.num_held_blocks(2), 3);
  m.free(1);
  m.free(2);
  EXPECT_EQ(m.pool().num_free_blocks(), 15);
  EXPECT_TRUE(m.check_invariants().ok());
}

}  // namespace
}  // namespace pagoda::kv
