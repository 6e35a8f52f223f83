// ProgressBar::render: bytes are printed as sizes, counts as counts with their noun (the bug
// this guards: perplexity's windows and run-batch's lines were printed as "42 B/84 B").
#include "cli/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

namespace pagoda::cli {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

std::unique_ptr<std::FILE, FileCloser> scratch() {
  return std::unique_ptr<std::FILE, FileCloser>(std::tmpfile());
}

TEST(HumanBytes, Units) {
  EXPECT_EQ(human_bytes(512), "512 B");
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(uint64_t{3} << 20), "3.0 MiB");
  EXPECT_EQ(human_bytes(uint64_t{5} << 30), "5.00 GiB");
}

TEST(ProgressBar, BytesShowItemCounterAndSizes) {
  auto f = scratch();
  ASSERT_NE(f, nullptr);
  ProgressBar bar("quantize", {}, f.get());
  const std::string line =
      bar.render(11, 201, "blk.3.ffn_up.weight", uint64_t{1} << 30, uint64_t{2} << 30, /*width=*/0);
  EXPECT_NE(line.find("quantize: 50%"), std::string::npos) << line;
  EXPECT_NE(line.find("12/201 1.00 GiB/2.00 GiB"), std::string::npos) << line;
  EXPECT_NE(line.find("blk.3.ffn_up.weight"), std::string::npos) << line;
}

TEST(ProgressBar, CountsShowTheirNounNotBytes) {
  auto f = scratch();
  ASSERT_NE(f, nullptr);
  ProgressBar bar("perplexity", "windows", f.get());
  const std::string line = bar.render(0, 0, "", 42, 84, /*width=*/0);
  EXPECT_NE(line.find("perplexity: 50% 42/84 windows"), std::string::npos) << line;
  EXPECT_NE(line.find("windows/s"), std::string::npos) << line;
  EXPECT_EQ(line.find(" B"), std::string::npos) << line;
}

TEST(ProgressBar, TerminalLineFitsTheWidthAndKeepsTheNoteEnd) {
  auto f = scratch();
  ASSERT_NE(f, nullptr);
  ProgressBar bar("run-batch", "lines", f.get());
  const std::string line = bar.render(0, 0, "(3 errors)", 10, 40, /*width=*/100);
  EXPECT_LE(line.size(), 99u);
  EXPECT_NE(line.find("[######..................]  25% 10/40 lines"), std::string::npos) << line;
  EXPECT_NE(line.find("(3 errors)"), std::string::npos) << line;
  const std::string narrow = bar.render(0, 0, "(3 errors)", 10, 40, /*width=*/60);
  EXPECT_LE(narrow.size(), 59u);
}

TEST(ProgressBar, WritesNothingOnAPipeForShortJobsButForcedFinalLine) {
  auto f = scratch();
  ASSERT_NE(f, nullptr);
  {
    ProgressBar bar("run-batch", "lines", f.get());
    bar.update_count(1, 2);  // within the 10 s interval: not drawn
    bar.update_count(2, 2, "(0 errors)", /*force=*/true);
  }
  std::rewind(f.get());
  char buf[256] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f.get());
  const std::string out(buf, n);
  EXPECT_EQ(out.find("1/2"), std::string::npos) << out;
  EXPECT_NE(out.find("run-batch: 100% 2/2 lines"), std::string::npos) << out;
}

}  // namespace
}  // namespace pagoda::cli
