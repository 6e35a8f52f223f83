#include "base/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>

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
