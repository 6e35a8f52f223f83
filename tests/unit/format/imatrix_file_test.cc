// llama.cpp's legacy imatrix .dat (format/imatrix_file.h): a written file reads back with the
// values divided by ncall as llama-quantize does; the bytes follow the documented layout; every
// truncation and the handcrafted corruptions are refused with an error, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "format/imatrix_file.h"

namespace pagoda::format {
namespace {

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), {});
}

Imatrix sample() {
  Imatrix m;
  m.entries.push_back({"blk.0.attn_q.weight", 4, {0.5f, 1.0f, 2.0f, 0.0f}});
  m.entries.push_back({"blk.0.ffn_down.weight", 2, {3.0f, 0.25f}});
  m.last_call = 4;
  m.dataset = "calib.txt";
  return m;
}

TEST(ImatrixFile, RoundTripAndLayout) {
  const std::string path = ::testing::TempDir() + "/im.dat";
  ASSERT_TRUE(write_imatrix(path, sample()).ok());
  const std::vector<uint8_t> b = file_bytes(path);
  // n_entries, then the first name's length and bytes, ncall, nval, values·ncall.
  int32_t v = 0;
  std::memcpy(&v, b.data(), 4);
  EXPECT_EQ(v, 2);
  std::memcpy(&v, b.data() + 4, 4);
  ASSERT_EQ(v, 19);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(b.data() + 8), 19), "blk.0.attn_q.weight");
  std::memcpy(&v, b.data() + 27, 4);
  EXPECT_EQ(v, 4);
  float f = 0;
  std::memcpy(&f, b.data() + 35, 4);
  EXPECT_EQ(f, 2.0f);  // 0.5 · ncall 4
  auto m = parse_imatrix(b);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  ASSERT_EQ(m->entries.size(), 2u);
  EXPECT_EQ(m->entries[0].values, sample().entries[0].values);
  EXPECT_EQ(m->entries[1].values, sample().entries[1].values);
  EXPECT_EQ(m->dataset, "calib.txt");
  EXPECT_EQ(m->last_call, 4);
  ASSERT_NE(m->find("blk.0.ffn_down.weight"), nullptr);
  EXPECT_EQ(m->find("nope"), nullptr);
}

TEST(ImatrixFile, CorruptBytesAreRefused) {
  const std::string path = ::testing::TempDir() + "/im2.dat";
  ASSERT_TRUE(write_imatrix(path, sample()).ok());
  const std::vector<uint8_t> b = file_bytes(path);
  const size_t entries_end = b.size() - 8 - 9;  // before last_call, dataset_len, dataset
  for (size_t cut = 0; cut < b.size(); ++cut) {
    auto r = parse_imatrix(std::span<const uint8_t>(b.data(), cut));
    EXPECT_EQ(r.ok(), cut == entries_end) << cut;  // the trailer is optional, nothing else
  }
  const auto patch = [&](size_t off, int32_t value) {
    std::vector<uint8_t> c = b;
    std::memcpy(c.data() + off, &value, 4);
    return parse_imatrix(c);
  };
  EXPECT_FALSE(patch(0, 0).ok());        // no entries
  EXPECT_FALSE(patch(0, 1 << 30).ok());  // more entries than bytes
  EXPECT_FALSE(patch(4, -1).ok());       // name length
  EXPECT_FALSE(patch(4, 1 << 30).ok());
  EXPECT_FALSE(patch(27, 0).ok());            // ncall
  EXPECT_FALSE(patch(31, 1 << 29).ok());      // nval
  EXPECT_FALSE(patch(35, -1082130432).ok());  // -1.0f: negative importance
  EXPECT_FALSE(patch(35, 0x7f800000).ok());   // inf
  std::vector<uint8_t> dup = b;  // second name := first name's first 19 bytes? make it equal
  Imatrix twice = sample();
  twice.entries[1].name = twice.entries[0].name;
  ASSERT_TRUE(write_imatrix(path, twice).ok());
  EXPECT_FALSE(parse_imatrix(file_bytes(path)).ok());
}

}  // namespace
}  // namespace pagoda::format
