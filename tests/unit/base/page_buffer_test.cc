#include "base/page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <utility>

namespace pagoda {
namespace {

TEST(PageBufferTest, ZeroedAlignedAndWritable) {
  const size_t bytes = (size_t{5} << 20) + 123;  // not a whole number of huge pages
  auto b = PageBuffer::allocate(bytes, HugePages::kYes);
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

// The line starting with `key` ("VmFlags:", "Rss:") of the mapping that holds p in
// /proc/self/smaps ("" if none).
std::string smaps_line(const void* p, const std::string& key) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = addr >= lo && addr < hi;
    } else if (inside && line.rfind(key, 0) == 0) {
      return line;
    }
  }
  return "";
}
std::string vm_flags(const void* p) {
  return smaps_line(p, "VmFlags:");
}
// Resident kB of the mapping that holds p.
long rss_kb(const void* p) {
  std::istringstream in(smaps_line(p, "Rss:").substr(4));
  long kb = -1;
  in >> kb;
  return kb;
}

// MADV_HUGEPAGE shows as the "hg" flag: asked for with kYes (unless PAGODA_HUGE_PAGES=0 or the
// kernel has no transparent huge pages), never with kNo.
TEST(PageBufferTest, AsksForHugePagesOnlyWhenTold) {
  auto huge = PageBuffer::allocate(size_t{4} << 20, HugePages::kYes);
  auto plain = PageBuffer::allocate(size_t{4} << 20, HugePages::kNo);
  ASSERT_TRUE(huge.ok() && plain.ok());
  const std::string huge_flags = vm_flags(huge->data());
  const std::string plain_flags = vm_flags(plain->data());
  ASSERT_FALSE(huge_flags.empty());
  ASSERT_FALSE(plain_flags.empty());
  const char* env = std::getenv("PAGODA_HUGE_PAGES");
  const bool kernel_has_thp = std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
  const bool enabled = kernel_has_thp && (env == nullptr || std::string(env) != "0");
  EXPECT_EQ(huge_flags.find(" hg") != std::string::npos, enabled) << huge_flags;
  EXPECT_EQ(plain_flags.find(" hg"), std::string::npos) << plain_flags;
}

// populate() makes every page resident up front (the KV cache relies on it: no page faults, and
// no huge-page compaction, in the middle of a request) and keeps the contents zero.
TEST(PageBufferTest, PopulateMakesThePagesResident) {
  for (HugePages huge : {HugePages::kNo, HugePages::kYes}) {
    const size_t bytes = (size_t{6} << 20) + 5;
    auto b = PageBuffer::allocate(bytes, huge);
    ASSERT_TRUE(b.ok());
    EXPECT_LT(rss_kb(b->data()), 1024) << "untouched memory should not be resident yet";
    ASSERT_TRUE(b->populate().ok());
    EXPECT_GE(rss_kb(b->data()), static_cast<long>(bytes / 1024)) << smaps_line(b->data(), "Rss:");
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; i += 4093)
      nonzero += b->data()[i] != 0;
    EXPECT_EQ(nonzero, 0u);
  }
  PageBuffer empty;
  EXPECT_TRUE(empty.populate().ok());
}

TEST(PageBufferTest, MoveTransfersOwnership) {
  auto b = PageBuffer::allocate(4096, HugePages::kNo);
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
  auto empty = PageBuffer::allocate(0, HugePages::kYes);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->data(), nullptr);
  EXPECT_EQ(empty->size(), 0u);
  // Overflows the huge-page rounding, then more than any address space: errors, not aborts.
  for (size_t bytes : {std::numeric_limits<size_t>::max(), size_t{1} << 62}) {
    auto b = PageBuffer::allocate(bytes, HugePages::kYes);
    ASSERT_FALSE(b.ok()) << bytes;
    EXPECT_EQ(b.status().code(), StatusCode::kResourceExhausted);
  }
}

}  // namespace
}  // namespace pagoda
