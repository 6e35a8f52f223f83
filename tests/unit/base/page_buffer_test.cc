#include "base/page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <utility>

namespace pagoda {
namespace {

TEST(PageBufferTest, ZeroedAlignedAndWritable) {
  const size_t bytes = (size_t{5} << 20) + 123;  // not a whole number of huge pages
  auto b = PageBuffer::allocate(bytes);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  ASSERT_NE(b->data(), nullptr);
  EXPECT_EQ(b->size(), bytes);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b->data()) % (size_t{2} << 20), 0u);
  size_t nonzero = 0;
  for (size_t i = 0; i < bytes; i += 4093)
    nonzero += b->data()[i] != 0;
  EXPECT_EQ(b->data()[bytes - 1], 0);
  EXPECT_EQ(nonzero, 0u);
  for (size_t i = 0; i < bytes; ++i)  // every byte of the requested size is ours to write
    b->data()[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(b->data()[bytes - 1], static_cast<uint8_t>(bytes - 1));
}

TEST(PageBufferTest, MoveTransfersOwnership) {
  auto b = PageBuffer::allocate(4096);
  ASSERT_TRUE(b.ok());
  uint8_t* p = b->data();
  p[0] = 7;
  PageBuffer moved = std::move(*b);
  EXPECT_EQ(moved.data(), p);
  EXPECT_EQ(moved.size(), 4096u);
  EXPECT_EQ(b->data(), nullptr);
  EXPECT_EQ(b->size(), 0u);
  PageBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.data()[0], 7);
  EXPECT_EQ(moved.data(), nullptr);
}

TEST(PageBufferTest, EmptyAndImpossibleSizes) {
  auto empty = PageBuffer::allocate(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->data(), nullptr);
  EXPECT_EQ(empty->size(), 0u);
  // Overflows the huge-page rounding, then more than any address space: errors, not aborts.
  for (size_t bytes : {std::numeric_limits<size_t>::max(), size_t{1} << 62}) {
    auto b = PageBuffer::allocate(bytes);
    ASSERT_FALSE(b.ok()) << bytes;
    EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  }
}

}  // namespace
}  // namespace pagoda
