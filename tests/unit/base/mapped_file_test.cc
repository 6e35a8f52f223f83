#include "base/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace pagoda {
namespace {

TEST(MappedFileTest, MapsContents) {
  auto path = std::filesystem::temp_directory_path() / "pagoda_mapped_file_test.bin";
  {
    std::ofstream out(path, std::ios::binary);
    out << "hello";
  }
  auto f = MappedFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->size(), 5u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(f->data()), 5), "hello");
  MappedFile moved = std::move(f).value();
  EXPECT_EQ(moved.size(), 5u);
  std::filesystem::remove(path);
}

// This process's resident KiB of the mapping that starts at `start` (/proc/self/smaps), or -1.
long resident_kib(const void* start) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%lx-%lx ", &lo, &hi) == 2 && line.find(' ') < line.find(':')) {
      in = lo == reinterpret_cast<uintptr_t>(start);
    } else if (in && line.rfind("Rss:", 0) == 0) {
      return std::strtol(line.c_str() + 4, nullptr, 10);
    }
  }
  return -1;
}

TEST(MappedFileTest, ReleasedFilePagesLeaveThisProcessAndStayReadable) {
  auto path = std::filesystem::temp_directory_path() / "pagoda_release_pages_test.bin";
  const size_t size = 64 * 4096;
  {
    std::ofstream out(path, std::ios::binary);
    for (size_t i = 0; i < size; ++i)
      out.put(static_cast<char>(i * 7 % 251));
  }
  auto f = MappedFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  unsigned sum = 0;
  for (size_t i = 0; i < size; i += 512)
    sum += f->data()[i];
  EXPECT_GE(resident_kib(f->data()), 200);  // touched
  release_pages(f->data(), f->data() + size);
  EXPECT_EQ(resident_kib(f->data()), 0);  // unmapped from this process (MADV_DONTNEED)
  unsigned again = 0;
  for (size_t i = 0; i < size; i += 512)
    again += f->data()[i];
  EXPECT_EQ(again, sum);
  for (size_t i = 0; i < size; i += 4093)
    ASSERT_EQ(f->data()[i], static_cast<uint8_t>(i * 7 % 251));
  std::filesystem::remove(path);
}

TEST(MappedFileTest, ReleasedHeapPagesKeepTheirContents) {
  std::vector<uint8_t> heap(64 * 4096);
  for (size_t i = 0; i < heap.size(); ++i)
    heap[i] = static_cast<uint8_t>(i * 13 % 253);
  release_pages(heap.data(), heap.data() + heap.size());  // (MADV_PAGEOUT: never zeroes)
  for (size_t i = 0; i < heap.size(); ++i)
    ASSERT_EQ(heap[i], static_cast<uint8_t>(i * 13 % 253));
}

TEST(MappedFileTest, MissingFileIsNotFound) {
  auto f = MappedFile::open("/nonexistent/pagoda/file.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

TEST(MappedFileTest, DirectoryIsRejected) {
  auto f = MappedFile::open("/tmp");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
}

// Issue 40: a FIFO (or any other non-regular file) is refused at once, never opened for a
// blocking read (which waited for a writer forever: `serve -m fifo` sat at 503 "loading").
TEST(MappedFileTest, FifoIsRefusedWithoutBlocking) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("pagoda_mapped_file_fifo_" + std::to_string(::getpid()));
  std::filesystem::remove(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  auto done = std::async(std::launch::async, [&] { return MappedFile::open(path.string()); });
  const bool returned = done.wait_for(std::chrono::seconds(5)) == std::future_status::ready;
  if (!returned) {
    // Release the blocked reader so the test can end (and fail).
    const int w = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (w >= 0) ::close(w);
  }
  auto f = done.get();
  std::filesystem::remove(path);
  ASSERT_TRUE(returned) << "MappedFile::open blocked on a FIFO";
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(f.status().message().find("FIFO"), std::string::npos) << f.status().message();
  auto dev = MappedFile::open("/dev/zero");
  ASSERT_FALSE(dev.ok());
  EXPECT_NE(dev.status().message().find("character device"), std::string::npos);
}

}  // namespace
}  // namespace pagoda
