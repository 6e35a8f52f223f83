// Pipeline micro-batches (model/micro_batch.h): for random batches, the parts tile the rows in
// order, each sequence's rows are covered exactly once with the same block table, and every
// logit row lands in one part, mapped back to its output index.
#include "model/micro_batch.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace pagoda::model {
namespace {

TEST(MicroBatch, PartsReassembleTheBatch) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int num_seqs = 1 + static_cast<int>(rng() % 6);
    std::vector<std::vector<int32_t>> tables(static_cast<size_t>(num_seqs));
    std::vector<SequenceSlice> seqs;
    std::vector<int32_t> tokens, positions, logit_rows;
    for (int s = 0; s < num_seqs; ++s) {
      const int n = 1 + static_cast<int>(rng() % 9);
      tables[static_cast<size_t>(s)] = {s, s + 10};
      seqs.push_back({static_cast<int32_t>(tokens.size()), n, tables[static_cast<size_t>(s)]});
      const int start = static_cast<int>(rng() % 5);
      for (int t = 0; t < n; ++t) {
        tokens.push_back(static_cast<int32_t>(rng() % 1000));
        positions.push_back(start + t);
      }
      logit_rows.push_back(static_cast<int32_t>(tokens.size()) - 1);  // last row samples
      if (rng() % 3 == 0) logit_rows.push_back(static_cast<int32_t>(tokens.size()) - n);
    }
    ForwardBatch whole;
    whole.tokens = tokens;
    whole.positions = positions;
    whole.sequences = seqs;
    whole.logit_rows = logit_rows;
    const int32_t max_parts = 1 + static_cast<int32_t>(rng() % 4);
    const std::vector<MicroBatch> parts = split_micro_batches(whole, max_parts);
    ASSERT_EQ(parts.size(), std::min<size_t>(static_cast<size_t>(max_parts), tokens.size()));
    std::vector<int> row_seen(tokens.size(), 0), logit_seen(logit_rows.size(), 0);
    int32_t next_row = 0;
    for (const MicroBatch& mb : parts) {
      ASSERT_EQ(mb.row_begin, next_row);
      ASSERT_FALSE(mb.batch.tokens.empty());
      next_row += static_cast<int32_t>(mb.batch.tokens.size());
      int32_t covered = 0;
      for (const SequenceSlice& s : mb.batch.sequences) {
        ASSERT_EQ(s.token_begin, covered);  // the parts' slices tile them in order
        covered += s.num_tokens;
        for (int32_t t = 0; t < s.num_tokens; ++t) {
          const int32_t row = mb.row_begin + s.token_begin + t;
          ++row_seen[static_cast<size_t>(row)];
          EXPECT_EQ(mb.batch.tokens[static_cast<size_t>(s.token_begin + t)],
                    tokens[static_cast<size_t>(row)]);
          EXPECT_EQ(mb.batch.positions[static_cast<size_t>(s.token_begin + t)],
                    positions[static_cast<size_t>(row)]);
          // The row's own sequence in the whole batch, with the same block table.
          const SequenceSlice* own = nullptr;
          for (const SequenceSlice& w : seqs) {
            if (row >= w.token_begin && row < w.token_begin + w.num_tokens) own = &w;
          }
          ASSERT_NE(own, nullptr);
          EXPECT_EQ(s.block_table.data(), own->block_table.data());
        }
      }
      EXPECT_EQ(covered, static_cast<int32_t>(mb.batch.tokens.size()));
      ASSERT_EQ(mb.batch.logit_rows.size(), mb.logit_outputs.size());
      for (size_t j = 0; j < mb.logit_outputs.size(); ++j) {
        const auto out = static_cast<size_t>(mb.logit_outputs[j]);
        ++logit_seen[out];
        EXPECT_EQ(mb.row_begin + mb.batch.logit_rows[j], logit_rows[out]);
      }
    }
    EXPECT_EQ(next_row, static_cast<int32_t>(tokens.size()));
    for (int c : row_seen)
      EXPECT_EQ(c, 1);
    for (int c : logit_seen)
      EXPECT_EQ(c, 1);
  }
}

}  // namespace
}  // namespace pagoda::model
