// KvManager: block-table growth, admission failure, prefix hits (never the whole prompt,
// salts, revival of freed blocks), free order, eviction, fork + copy-on-write, stats.
#include "kv/kv_manager.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace pagoda::kv {
namespace {

KvManager make(int32_t num_blocks, int32_t block_size, bool caching = true) {
  auto m = KvManager::create(KvManagerConfig{num_blocks, block_size, caching});
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return std::move(m).value();
}

std::vector<TokenId> tokens(int n, TokenId first = 100) {
  std::vector<TokenId> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

SequenceView view(SeqId id, const std::vector<TokenId>& t, int64_t computed,
                  std::string_view salt = "") {
  return SequenceView{id, t, computed, salt};
}

TEST(KvManager, RejectsBadConfigNamingTheField) {
  auto a = KvManager::create(KvManagerConfig{1, 16, true});
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("num_blocks"), std::string::npos);
  auto b = KvManager::create(KvManagerConfig{8, 0, true});
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("block_size"), std::string::npos);
}

TEST(KvManager, GrowsTheTableOnDemand) {
  KvManager m = make(10, 4);
  std::vector<TokenId> t = tokens(10);
  auto a = m.allocate_slots(view(1, t, 0), 10);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->new_block_ids.size(), 3u);  // ceil(10 / 4)
  EXPECT_TRUE(a->copies.empty());
  EXPECT_EQ(m.block_table(1).size(), 3u);
  t.push_back(1);  // the 11th token fits in block 2
  auto b = m.allocate_slots(view(1, t, 10), 1);
  ASSERT_TRUE(b.has_value());
  EXPECT_TRUE(b->new_block_ids.empty());
  t.push_back(2);
  t.push_back(3);  // 13 tokens: a 4th block
  auto c = m.allocate_slots(view(1, t, 11), 2);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->new_block_ids.size(), 1u);
  EXPECT_EQ(m.block_table(1).size(), 4u);
  // Lookahead slots reserve room beyond the known tokens.
  auto d = m.allocate_slots(view(1, t, 13), 0, nullptr, 8);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(m.block_table(1).size(), 6u);  // ceil(21 / 4)
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, TrimFreesTheBlocksOfRejectedDraftsAndKeepsCachedOnes) {
  KvManager m = make(10, 4);
  std::vector<TokenId> t = tokens(9);
  // 9 known tokens computed up to 8, the 9th plus 6 drafts as lookahead: 15 slots, 4 blocks.
  ASSERT_TRUE(m.allocate_slots(view(1, t, 0), 8).has_value());
  m.cache_blocks(view(1, t, 8));  // blocks 0 and 1 published
  ASSERT_TRUE(m.allocate_slots(view(1, t, 8), 1, nullptr, 6).has_value());
  ASSERT_EQ(m.block_table(1).size(), 4u);
  const BlockId rejected = m.block_table(1)[3];
  // Two drafts accepted plus a bonus token: 12 tokens, 3 blocks.
  m.trim(1, m.num_blocks_for_tokens(12));
  EXPECT_EQ(m.block_table(1).size(), 3u);
  EXPECT_EQ(m.pool().ref_count(rejected), 0);
  EXPECT_FALSE(m.pool().block_hash(rejected).has_value());
  EXPECT_EQ(m.stats().num_used_blocks, 3);
  EXPECT_EQ(m.stats().num_cached_blocks, 2);
  m.trim(1, 5);   // nothing past the table: no-op
  m.trim(99, 0);  // unknown: ignored
  EXPECT_EQ(m.block_table(1).size(), 3u);
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, LookaheadSlotsInASharedBlockAreCopiedOnWrite) {
  KvManager m = make(10, 4);
  std::vector<TokenId> t = tokens(6);
  ASSERT_TRUE(m.allocate_slots(view(1, t, 0), 6).has_value());
  ASSERT_TRUE(m.fork(view(1, t, 6), 2).ok());  // block 1 (tokens 4, 5) shared
  t.push_back(7);
  // The child's new token at 6 and lookahead drafts at 7.. write block 1: a private copy.
  auto a = m.allocate_slots(view(2, t, 6), 1, nullptr, 3);
  ASSERT_TRUE(a.has_value());
  ASSERT_EQ(a->copies.size(), 1u);
  EXPECT_EQ(a->copies[0].src, m.block_table(1)[1]);
  EXPECT_NE(m.block_table(2)[1], m.block_table(1)[1]);
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, FailsWithoutChangingAnythingWhenBlocksRunOut) {
  KvManager m = make(4, 4);  // 3 usable blocks
  const std::vector<TokenId> t = tokens(16);
  EXPECT_FALSE(m.allocate_slots(view(1, t, 0), 13).has_value());  // needs 4
  EXPECT_FALSE(m.contains(1));
  EXPECT_EQ(m.pool().num_free_blocks(), 3);
  ASSERT_TRUE(m.allocate_slots(view(1, t, 0), 12).has_value());
  EXPECT_FALSE(m.allocate_slots(view(1, t, 12), 1).has_value());
  EXPECT_EQ(m.block_table(1).size(), 3u);
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, PrefixHitCoversFullComputedBlocksButNeverTheWholePrompt) {
  KvManager m = make(16, 4);
  const std::vector<TokenId> a = tokens(10);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 10).has_value());
  // Nothing is published before the tokens are computed.
  EXPECT_TRUE(m.get_computed_blocks(view(2, a, 0)).blocks.empty());
  m.cache_blocks(view(1, a, 10));  // 2 full blocks published; the partial one is not
  EXPECT_EQ(m.pool().num_cached_blocks(), 2);

  std::vector<TokenId> b(a.begin(), a.begin() + 8);
  b.push_back(7);
  b.push_back(8);
  b.push_back(9);  // shares 8 tokens (2 blocks) with a
  PrefixHit hit = m.get_computed_blocks(view(2, b, 0));
  EXPECT_EQ(hit.num_tokens, 8);
  ASSERT_EQ(hit.blocks.size(), 2u);
  EXPECT_EQ(hit.blocks[0], m.block_table(1)[0]);
  EXPECT_EQ(hit.blocks[1], m.block_table(1)[1]);

  // Exactly 8 tokens: the second block is left to compute so there are logits.
  const std::vector<TokenId> c(a.begin(), a.begin() + 8);
  EXPECT_EQ(m.get_computed_blocks(view(3, c, 0)).num_tokens, 4);
  // Another salt sees nothing; a different first token breaks the whole chain.
  EXPECT_EQ(m.get_computed_blocks(view(4, b, 0, "other")).num_tokens, 0);
  std::vector<TokenId> d = b;
  d[0] = 1;
  EXPECT_EQ(m.get_computed_blocks(view(5, d, 0)).num_tokens, 0);

  // Taking the hit shares the blocks; the new tokens start after them.
  auto alloc = m.allocate_slots(view(2, b, 0), 3, &hit);
  ASSERT_TRUE(alloc.has_value());
  EXPECT_EQ(alloc->new_block_ids.size(), 1u);
  EXPECT_EQ(m.pool().ref_count(hit.blocks[0]), 2);
  EXPECT_EQ(m.block_table(2).size(), 3u);
  const KvStats s = m.stats();
  EXPECT_EQ(s.prefix_cache_queries, 11);
  EXPECT_EQ(s.prefix_cache_hits, 8);
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, FreedBlocksStayHitableAndAreRevived) {
  KvManager m = make(6, 4);  // 5 usable
  const std::vector<TokenId> a = tokens(9);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 9).has_value());
  m.cache_blocks(view(1, a, 9));
  const std::vector<BlockId> table(m.block_table(1).begin(), m.block_table(1).end());
  m.free(1);
  EXPECT_EQ(m.pool().num_free_blocks(), 5);
  // Reverse order: the partial tail block is first in line for eviction.
  const std::vector<BlockId> fl = m.pool().free_list();
  ASSERT_EQ(fl.size(), 5u);
  EXPECT_EQ(fl[2], table[2]);
  EXPECT_EQ(fl[3], table[1]);
  EXPECT_EQ(fl[4], table[0]);

  PrefixHit hit = m.get_computed_blocks(view(2, a, 0));
  ASSERT_EQ(hit.num_tokens, 8);
  // 5 free, 2 of them are the hit: 3 left for new blocks. Asking for 4 more fails.
  std::vector<TokenId> big = a;
  for (int i = 0; i < 16; ++i)
    big.push_back(i);
  EXPECT_FALSE(m.allocate_slots(view(2, big, 0), 17, &hit).has_value());
  auto ok = m.allocate_slots(view(2, big, 0), 12, &hit);  // 20 tokens = 5 blocks
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->new_block_ids.size(), 3u);
  EXPECT_EQ(m.block_table(2)[0], table[0]);
  EXPECT_EQ(m.block_table(2)[1], table[1]);
  EXPECT_EQ(m.pool().num_free_blocks(), 0);
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, EvictionDropsTheHashOfAReusedBlock) {
  KvManager m = make(4, 2);  // 3 usable
  const std::vector<TokenId> a = tokens(5);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 5).has_value());
  m.cache_blocks(view(1, a, 5));
  m.free(1);
  EXPECT_EQ(m.get_computed_blocks(view(2, a, 0)).num_tokens, 4);
  // A different sequence takes 2 blocks: the tail (partial, uncached) then block 1 of a.
  const std::vector<TokenId> b = tokens(4, 900);
  ASSERT_TRUE(m.allocate_slots(view(3, b, 0), 4).has_value());
  EXPECT_EQ(m.get_computed_blocks(view(2, a, 0)).num_tokens, 2);
  EXPECT_EQ(m.stats().num_evictions, 1);
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, ForkSharesBlocksAndCopiesOnWrite) {
  KvManager m = make(16, 4);
  std::vector<TokenId> p = tokens(6);
  ASSERT_TRUE(m.allocate_slots(view(1, p, 0), 6).has_value());
  m.cache_blocks(view(1, p, 6));
  ASSERT_TRUE(m.fork(view(1, p, 6), 2).ok());
  EXPECT_FALSE(m.fork(view(1, p, 6), 2).ok());  // child exists
  EXPECT_FALSE(m.fork(view(9, p, 6), 3).ok());  // parent unknown
  const BlockId full = m.block_table(1)[0];
  const BlockId partial = m.block_table(1)[1];
  EXPECT_EQ(m.block_table(2)[0], full);
  EXPECT_EQ(m.block_table(2)[1], partial);
  EXPECT_EQ(m.pool().ref_count(full), 2);
  EXPECT_EQ(m.pool().ref_count(partial), 2);

  // The child writes position 6 (inside the shared partial block): it gets a private copy.
  std::vector<TokenId> c = p;
  c.push_back(50);
  auto ca = m.allocate_slots(view(2, c, 6), 1);
  ASSERT_TRUE(ca.has_value());
  ASSERT_EQ(ca->copies.size(), 1u);
  EXPECT_EQ(ca->copies[0].src, partial);
  EXPECT_NE(ca->copies[0].dst, partial);
  EXPECT_EQ(m.block_table(2)[1], ca->copies[0].dst);
  EXPECT_EQ(m.block_table(2)[0], full);  // full blocks stay shared
  EXPECT_EQ(m.pool().ref_count(partial), 1);
  // The parent now owns its block alone: no copy.
  p.push_back(60);
  auto pa = m.allocate_slots(view(1, p, 6), 1);
  ASSERT_TRUE(pa.has_value());
  EXPECT_TRUE(pa->copies.empty());
  EXPECT_EQ(m.block_table(1)[1], partial);
  EXPECT_EQ(m.stats().num_cow_copies, 1);
  EXPECT_TRUE(m.check_invariants().ok());

  // A fork at a block boundary needs no copy at all.
  std::vector<TokenId> q = tokens(8, 500);
  ASSERT_TRUE(m.allocate_slots(view(5, q, 0), 8).has_value());
  ASSERT_TRUE(m.fork(view(5, q, 8), 6).ok());
  q.push_back(1);
  auto qa = m.allocate_slots(view(6, q, 8), 1);
  ASSERT_TRUE(qa.has_value());
  EXPECT_TRUE(qa->copies.empty());
  EXPECT_EQ(qa->new_block_ids.size(), 1u);
  for (SeqId id : {1, 2, 5, 6})
    m.free(id);
  EXPECT_EQ(m.pool().num_free_blocks(), 15);
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, CopyOnWriteNeedsAFreeBlock) {
  KvManager m = make(3, 4);  // 2 usable
  std::vector<TokenId> p = tokens(6);
  ASSERT_TRUE(m.allocate_slots(view(1, p, 0), 6).has_value());
  ASSERT_TRUE(m.fork(view(1, p, 6), 2).ok());
  p.push_back(1);
  EXPECT_FALSE(m.allocate_slots(view(2, p, 6), 1).has_value());
  EXPECT_EQ(m.pool().ref_count(m.block_table(2)[1]), 2);  // unchanged
  m.free(1);  // once the parent is gone the child writes in place
  auto a = m.allocate_slots(view(2, p, 6), 1);
  ASSERT_TRUE(a.has_value());
  EXPECT_TRUE(a->copies.empty());
  EXPECT_TRUE(m.check_invariants().ok());
}

TEST(KvManager, CachingOffNeverHits) {
  KvManager m = make(8, 4, /*caching=*/false);
  const std::vector<TokenId> a = tokens(9);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 9).has_value());
  m.cache_blocks(view(1, a, 9));
  EXPECT_EQ(m.pool().num_cached_blocks(), 0);
  EXPECT_EQ(m.get_computed_blocks(view(2, a, 0)).num_tokens, 0);
}

TEST(KvManager, ResetPrefixCacheForgetsEverything) {
  KvManager m = make(8, 4);
  const std::vector<TokenId> a = tokens(9);
  ASSERT_TRUE(m.allocate_slots(view(1, a, 0), 9).has_value());
  m.cache_blocks(view(1, a, 9));
  EXPECT_EQ(m.reset_prefix_cache(), 2);
  EXPECT_EQ(m.get_computed_blocks(view(2, a, 0)).num_tokens, 0);
  EXPECT_TRUE(m.check_invariants().ok());
}

}  // namespace
}  // namespace pagoda::kv
