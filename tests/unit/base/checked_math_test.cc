#include "base/checked_math.h"

#include <gtest/gtest.h>

namespace pagoda {
namespace {

TEST(CheckedMathTest, DetectsOverflow) {
  EXPECT_EQ(checked_add<uint64_t>(1, 2), 3u);
  EXPECT_FALSE(checked_add<uint64_t>(UINT64_MAX, 1));
  EXPECT_FALSE(checked_mul<uint64_t>(UINT64_MAX / 2 + 1, 2));
  EXPECT_EQ(checked_mul<uint64_t>(1u << 20, 1u << 20), uint64_t{1} << 40);
  EXPECT_FALSE(checked_sub<uint64_t>(1, 2));
  EXPECT_FALSE((checked_cast<int32_t, uint64_t>(uint64_t{1} << 31)));
  EXPECT_EQ((checked_cast<int32_t, uint64_t>(7)), 7);
  EXPECT_FALSE((checked_cast<uint32_t, int>(-1)));
}

TEST(CheckedMathTest, Alignment) {
  EXPECT_TRUE(is_power_of_two(32));
  EXPECT_FALSE(is_power_of_two(0));
  EXPECT_FALSE(is_power_of_two(48));
  EXPECT_EQ(checked_align_up(33, 32), 64u);
  EXPECT_EQ(checked_align_up(64, 32), 64u);
  EXPECT_FALSE(checked_align_up(UINT64_MAX - 3, 32));
}

}  // namespace
}  // namespace pagoda
