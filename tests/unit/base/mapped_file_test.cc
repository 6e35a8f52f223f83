#include "base/mapped_file.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace pagoda
