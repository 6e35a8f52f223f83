// The q/k row permutation of `pagoda convert` (model/hf/hf_to_gguf.h) against llama.cpp's
// converter, written here the way it is written there: reshape(n_head, 2, half, ...) then
// swapaxes(1, 2); and a hand-computed case.
#include <gtest/gtest.h>

#include <vector>

#include "model/hf/hf_to_gguf.h"

namespace pagoda::model {
namespace {

// out[h][i][s] = in[h][s][i] over the row index (rows = n_head * 2 * half).
std::vector<int64_t> permuted_sources(int32_t n_head, int64_t half) {
  std::vector<int64_t> out;
  for (int64_t h = 0; h < n_head; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t s = 0; s < 2; ++s)
        out.push_back((h * 2 + s) * half + i);
    }
  }
  return out;
}

TEST(HfToGgufTest, QkPermutationByHand) {
  // Two heads of four rows: rotate-half pairs (0, 2), (1, 3) become adjacent.
  const std::vector<int64_t> expected = {0, 2, 1, 3, 4, 6, 5, 7};
  for (int64_t r = 0; r < 8; ++r)
    EXPECT_EQ(gguf_qk_source_row(r, 8, 2), expected[static_cast<size_t>(r)]);
}

TEST(HfToGgufTest, QkPermutationMatchesLlamaCppReshape) {
  for (int32_t n_head : {1, 2, 4, 8, 32}) {
    for (int64_t half : {1, 2, 32, 64}) {
      const int64_t rows = n_head * 2 * half;
      const auto expected = permuted_sources(n_head, half);
      std::vector<bool> seen(static_cast<size_t>(rows), false);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t src = gguf_qk_source_row(r, rows, n_head);
        ASSERT_EQ(src, expected[static_cast<size_t>(r)]) << n_head << " " << half << " " << r;
        seen[static_cast<size_t>(src)] = true;
      }
      for (bool b : seen)
        EXPECT_TRUE(b);  // a permutation
    }
  }
}

}  // namespace
}  // namespace pagoda::model
