// Randomised KvManager workout: sequences are added (with prefix hits), stepped in chunks,
// decoded, forked, preempted, aborted and finished in random order over many seeds. The test
// plays the runner: it keeps a shadow of the KV storage ([block][slot] = token written there),
// applies the reported copies, and writes each computed token through the block table. After
// every operation it checks that every computed position of every live sequence reads back its
// own token (so prefix hits, copy-on-write and eviction never hand out wrong data), that no
// write lands in a shared block, that ref counts equal the number of tables holding a block,
// and at the end that the pool is back to its initial state. The hybrid variant runs layer
// groups with their own windows (KvManagerConfig::group_windows): each group's table is written
// and read back, null entries only behind that group's window.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "kv/kv_manager.h"

namespace pagoda::kv {
namespace {

struct Seq {
  std::vector<TokenId> tokens;
  int64_t computed = 0;
  int64_t target_len = 0;  // finishes when tokens reach this length
  std::string salt;
  bool admitted = false;
};

class Workout {
 public:
  Workout(uint32_t seed, int32_t num_blocks, int32_t block_size,
          std::vector<int32_t> group_windows = {})
      : rng_(seed),
        bs_(block_size),
        m_(std::move(KvManager::create(KvManagerConfig{num_blocks, block_size, true, 0,
                                                       std::move(group_windows)}))
               .value()),
        shadow_(static_cast<size_t>(num_blocks) * block_size, -1) {
    // A few shared "system prompts" so prefixes collide often.
    for (int p = 0; p < 3; ++p) {
      std::vector<TokenId> t;
      const int len = 1 + static_cast<int>(rng_() % (4 * bs_));
      for (int i = 0; i < len; ++i)
        t.push_back(static_cast<TokenId>(rng_() % 8));
      prefixes_.push_back(t);
    }
  }

  void run(int ops) {
    for (int op = 0; op < ops; ++op) {
      const uint32_t r = rng_() % 100;
      if (r < 20) {
        add();
      } else if (r < 75) {
        step();
      } else if (r < 90) {
        preempt();
      } else {
        abort_one();
      }
      verify();
      if (::testing::Test::HasFatalFailure()) return;
    }
    for (auto& [id, s] : seqs_)
      m_.free(id);
    seqs_.clear();
    verify();
    const BlockPool& pool = m_.pool();
    EXPECT_EQ(pool.num_free_blocks(), pool.num_usable_blocks());
    for (BlockId b = 0; b < pool.num_blocks(); ++b)
      EXPECT_EQ(pool.ref_count(b), 0);
    EXPECT_EQ(m_.num_sequences(), 0u);
  }

  int64_t num_hit_tokens() const { return hit_tokens_; }
  int64_t num_copies() const { return copies_; }

 private:
  SequenceView view(SeqId id) const {
    const Seq& s = seqs_.at(id);
    return SequenceView{id, s.tokens, s.computed, s.salt};
  }

  void add() {
    Seq s;
    s.tokens = prefixes_[rng_() % prefixes_.size()];
    const int extra = static_cast<int>(rng_() % (3 * bs_));
    for (int i = 0; i < extra; ++i)
      s.tokens.push_back(static_cast<TokenId>(rng_() % 8));
    s.target_len = static_cast<int64_t>(s.tokens.size()) + 1 + rng_() % (2 * bs_);
    s.salt = rng_() % 5 == 0 ? "salted" : "";
    seqs_.emplace(next_id_++, std::move(s));
  }

  // Picks a random live sequence id (or 0 if none).
  SeqId pick() {
    if (seqs_.empty()) return 0;
    auto it = seqs_.begin();
    std::advance(it, rng_() % seqs_.size());
    return it->first;
  }

  void step() {
    const SeqId id = pick();
    if (id == 0) return;
    Seq& s = seqs_.at(id);
    std::optional<SlotAllocation> alloc;
    const int64_t remaining_before_hit = static_cast<int64_t>(s.tokens.size()) - s.computed;
    if (!s.admitted) {
      const PrefixHit hit = m_.get_computed_blocks(view(id));
      // Every hit block must already hold exactly this sequence's tokens; null only before the
      // group's window of the hit's end.
      for (int32_t g = 0; g < m_.num_groups(); ++g) {
        const std::vector<BlockId>& blocks = g == 0 ? hit.blocks : hit.other_groups[g - 1];
        ASSERT_EQ(blocks.size(), hit.blocks.size());
        for (size_t i = 0; i < blocks.size(); ++i) {
          if (blocks[i] == kNullBlockId) {
            ASSERT_LT(static_cast<int64_t>(i), m_.first_block_in_window(hit.num_tokens, g));
            continue;
          }
          for (int32_t j = 0; j < bs_; ++j) {
            ASSERT_EQ(shadow_[blocks[i] * bs_ + j], s.tokens[i * bs_ + j]);
          }
        }
      }
      const int64_t remaining = static_cast<int64_t>(s.tokens.size()) - hit.num_tokens;
      const int64_t n = 1 + static_cast<int64_t>(rng_() % remaining);
      alloc = m_.allocate_slots(view(id), n, &hit);
      if (!alloc) return;
      s.admitted = true;
      s.computed = hit.num_tokens;
      hit_tokens_ += hit.num_tokens;
      write(id, *alloc, n);
    } else {
      const int64_t n = 1 + static_cast<int64_t>(rng_() % remaining_before_hit);
      const int64_t lookahead = rng_() % 4 == 0 ? rng_() % 5 : 0;
      alloc = m_.allocate_slots(view(id), n, nullptr, lookahead);
      if (!alloc) return;
      write(id, *alloc, n);
    }
    m_.cache_blocks(view(id));
    if (s.computed == static_cast<int64_t>(s.tokens.size())) {  // "sample" the next token
      if (static_cast<int64_t>(s.tokens.size()) >= s.target_len) {
        m_.free(id);  // finished
        seqs_.erase(id);
        return;
      }
      if (rng_() % 4 == 0) {
        fork(id);  // n > 1: split right after the step that produced the logits
      } else {
        s.tokens.push_back(static_cast<TokenId>(rng_() % 8));
      }
    }
  }

  // The runner's part: copies first, then the token writes through the table.
  void write(SeqId id, const SlotAllocation& alloc, int64_t n) {
    for (const BlockCopy& c : alloc.copies) {
      for (int32_t j = 0; j < bs_; ++j)
        shadow_[c.dst * bs_ + j] = shadow_[c.src * bs_ + j];
      ++copies_;
    }
    Seq& s = seqs_.at(id);
    for (int32_t g = 0; g < m_.num_groups(); ++g) {
      const std::span<const BlockId> table = m_.block_table(id, g);
      for (int64_t p = s.computed; p < s.computed + n; ++p) {
        const BlockId b = table[p / bs_];
        ASSERT_NE(b, kNullBlockId) << "write into a released entry, group " << g;
        ASSERT_EQ(m_.pool().ref_count(b), 1) << "write into a shared block " << b;
        ASSERT_FALSE(m_.pool().block_hash(b).has_value()) << "write into a cached block " << b;
        shadow_[b * bs_ + p % bs_] = s.tokens[p];
      }
    }
    s.computed += n;
  }

  // Forks as the scheduler does: when the parent has computed every known token; then parent and
  // child each get a different next token.
  void fork(SeqId id) {
    Seq& s = seqs_.at(id);
    Seq child = s;
    ASSERT_TRUE(m_.fork(view(id), next_id_).ok());
    child.tokens.push_back(static_cast<TokenId>(rng_() % 8));
    s.tokens.push_back(static_cast<TokenId>(rng_() % 8));
    const SeqId child_id = next_id_++;
    seqs_.emplace(child_id, std::move(child));
  }

  void preempt() {
    const SeqId id = pick();
    if (id == 0) return;
    m_.free(id);
    Seq& s = seqs_.at(id);
    s.computed = 0;
    s.admitted = false;
  }

  void abort_one() {
    const SeqId id = pick();
    if (id == 0) return;
    m_.free(id);
    seqs_.erase(id);
  }

  void verify() {
    const Status st = m_.check_invariants();
    ASSERT_TRUE(st.ok()) << st.to_string();
    // Independent ref counts: count table memberships ourselves.
    std::vector<int32_t> holders(m_.pool().num_blocks(), 0);
    for (const auto& [id, s] : seqs_) {
      for (int32_t g = 0; g < m_.num_groups(); ++g) {
        const std::span<const BlockId> table = m_.block_table(id, g);
        ASSERT_GE(static_cast<int64_t>(table.size()) * bs_, s.computed);
        for (const BlockId b : table)
          holders[b] += b != kNullBlockId ? 1 : 0;
        // Every position the next query of this group reads holds its token; only blocks
        // before that window may be released.
        const int64_t first = m_.first_block_in_window(s.computed, g);
        for (int64_t p = 0; p < s.computed; ++p) {
          const BlockId b = table[p / bs_];
          if (b == kNullBlockId) {
            ASSERT_LT(p / bs_, first) << "sequence " << id << " group " << g << " position " << p;
            continue;
          }
          ASSERT_EQ(shadow_[b * bs_ + p % bs_], s.tokens[p])
              << "sequence " << id << " group " << g << " position " << p;
        }
      }
    }
    for (BlockId b = 0; b < m_.pool().num_blocks(); ++b) {
      ASSERT_EQ(m_.pool().ref_count(b), holders[b]) << "block " << b;
    }
  }

  std::mt19937 rng_;
  int32_t bs_;
  KvManager m_;
  std::vector<TokenId> shadow_;
  std::vector<std::vector<TokenId>> prefixes_;
  std::map<SeqId, Seq> seqs_;
  SeqId next_id_ = 1;
  int64_t hit_tokens_ = 0;
  int64_t copies_ = 0;
};

TEST(KvRandom, ManySeedsKeepDataRefCountsAndThePoolConsistent) {
  int64_t total_hits = 0;
  int64_t total_copies = 0;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    const int32_t block_size = 1 + static_cast<int32_t>(seed % 5);
    const int32_t num_blocks = 4 + static_cast<int32_t>((seed * 7) % 40);
    Workout w(seed, num_blocks, block_size);
    w.run(400);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
    total_hits += w.num_hit_tokens();
    total_copies += w.num_copies();
  }
  // The workload must actually exercise prefix hits and copy-on-write.
  EXPECT_GT(total_hits, 0);
  EXPECT_GT(total_copies, 0);
}

// Layer groups: a full group and one or two sliding groups (windows 1 to 2 blocks + 1), so
// each group's tables, releases, per-group hits and copies are checked against the shadow.
TEST(KvRandom, HybridGroupsKeepEveryGroupsDataAndThePoolConsistent) {
  int64_t total_hits = 0;
  int64_t total_copies = 0;
  for (uint32_t seed = 0; seed < 150; ++seed) {
    const int32_t block_size = 1 + static_cast<int32_t>(seed % 5);
    const int32_t num_blocks = 8 + static_cast<int32_t>((seed * 7) % 60);
    std::vector<int32_t> windows = {0, 1 + block_size * static_cast<int32_t>(seed % 3)};
    if (seed % 4 == 1) windows.insert(windows.begin(), block_size + 1);
    Workout w(seed, num_blocks, block_size, windows);
    w.run(400);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << "seed " << seed;
      return;
    }
    total_hits += w.num_hit_tokens();
    total_copies += w.num_copies();
  }
  EXPECT_GT(total_hits, 0);
  EXPECT_GT(total_copies, 0);
}

}  // namespace
}  // namespace pagoda::kv
