#include "tensor/dtype.h"

#include <gtest/gtest.h>

namespace pagoda::tensor {
namespace {

TEST(DTypeTest, GgmlLayouts) {
  EXPECT_EQ(dtype_info(DType::kQ4_0).type_size, 18u);
  EXPECT_EQ(dtype_info(DType::kQ4_K).type_size, 144u);
  EXPECT_EQ(dtype_info(DType::kQ6_K).block_size, 256u);
  EXPECT_FALSE(dtype_info(4).has_value());  // removed Q4_2
  EXPECT_FALSE(dtype_info(999).has_value());
  EXPECT_EQ(dtype_info(30)->name, "BF16");
  EXPECT_EQ(dtype_from_name("q8_0"), DType::kQ8_0);
  EXPECT_FALSE(dtype_from_name("Q9_9"));
}

TEST(DTypeTest, RowSize) {
  EXPECT_EQ(*row_size_bytes(DType::kQ4_0, 64), 36u);
  EXPECT_EQ(*row_size_bytes(DType::kF16, 3), 6u);
  EXPECT_FALSE(row_size_bytes(DType::kQ4_K, 100).ok());
  EXPECT_FALSE(row_size_bytes(DType::kF64, UINT64_MAX).ok());
}

}  // namespace
}  // namespace pagoda::tensor
