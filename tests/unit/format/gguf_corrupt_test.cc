// One handcrafted corrupt file per structural validation rule: a valid file from the writer with
// bytes patched at offsets found by searching the image (not by asking the reader), or raw bytes
// built by hand. Each test checks the error names the right field (and offset where useful).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "gguf_test_util.h"

namespace pagoda::format {
namespace {

using testing::Bytes;
using testing::find_bytes;
using testing::patch_u32;
using testing::patch_u64;
using testing::RawBuilder;
using testing::record_offset;
using V = GgufWriteValue;

// A small valid file: keys of several types and three tensors of different types.
GgufWriter base_writer() {
  GgufWriter w;
  w.set("general.architecture", V::string("test"))
      .set("general.name", V::string("corrupt-me"))
      .set("test.list", V::array<int32_t>({1, 2, 3}))
      .set("test.strings", V::string_array({"aa", "bbb"}))
      .set("test.flag", V::boolean(true));
  w.add_tensor("tensor.one", tensor::DType::kF32, {8, 2}, Bytes(64, 1));
  w.add_tensor("tensor.two", tensor::DType::kQ8_0, {32, 2}, Bytes(68, 2));
  w.add_tensor("tensor.three", tensor::DType::kF16, {4}, Bytes(8, 3));
  return w;
}

Bytes base_bytes() {
  auto b = base_writer().to_bytes();
  EXPECT_TRUE(b.ok());
  return *b;
}

// Field offsets of a key/value record (located by searching for its key).
struct KvAt {
  uint64_t at;       // record start (key length)
  uint64_t type_at;  // u32 value type
  uint64_t value_at;
};
KvAt kv_at(const Bytes& b, std::string_view key) {
  const uint64_t at = record_offset(b, key);
  return {at, at + 8 + key.size(), at + 8 + key.size() + 4};
}

// Field offsets of a tensor info (located by searching for its name).
struct InfoAt {
  uint64_t at;
  uint64_t n_dims_at;
  uint64_t dims_at;
  uint64_t type_at;
  uint64_t offset_at;
};
InfoAt info_at(const Bytes& b, std::string_view name, uint32_t n_dims) {
  const uint64_t at = record_offset(b, name);
  const uint64_t n_dims_at = at + 8 + name.size();
  return {at, n_dims_at, n_dims_at + 4, n_dims_at + 4 + 8 * n_dims, n_dims_at + 8 + 8 * n_dims};
}

std::string tensor_where(const Bytes& b, std::string_view name) {
  return fmt::format("tensor '{}' (tensor info at offset {})", name, record_offset(b, name));
}
std::string key_where(const Bytes& b, std::string_view key) {
  return fmt::format("key '{}' (at offset {})", key, record_offset(b, key));
}

TEST(GgufCorrupt, BaseFileIsValid) {
  EXPECT_EQ(testing::parse_error(base_bytes()), "");
}

TEST(GgufCorrupt, TooSmallForMagic) {
  EXPECT_GGUF_ERROR(Bytes{}, "test.gguf", "magic", "needs 4 bytes, 0 left");
  EXPECT_GGUF_ERROR((Bytes{'G', 'G', 'U'}), "magic");
}

TEST(GgufCorrupt, BadMagic) {
  Bytes b = base_bytes();
  b[3] = 'X';
  EXPECT_GGUF_ERROR(b, "not a GGUF file", "GGUX");
}

TEST(GgufCorrupt, Version1Rejected) {
  Bytes b = base_bytes();
  patch_u32(b, 4, 1);
  EXPECT_GGUF_ERROR(b, "version 1", "32-bit");
  auto f = GgufFile::parse(b);
  EXPECT_EQ(f.status().code(), StatusCode::kUnimplemented);
}

TEST(GgufCorrupt, UnsupportedVersions) {
  for (uint32_t v : {0u, 4u, 77u}) {
    Bytes b = base_bytes();
    patch_u32(b, 4, v);
    EXPECT_GGUF_ERROR(b, fmt::format("unsupported GGUF version {}", v));
  }
}

TEST(GgufCorrupt, BigEndianVersion) {
  Bytes b = base_bytes();
  patch_u32(b, 4, 0x03000000u);
  EXPECT_GGUF_ERROR(b, "big-endian");
}

TEST(GgufCorrupt, TensorCountBeyondFile) {
  Bytes b = base_bytes();
  patch_u64(b, 8, uint64_t{1} << 40);
  EXPECT_GGUF_ERROR(b, "header", "tensor count 1099511627776", "offset 8");
  patch_u64(b, 8, ~uint64_t{0});
  EXPECT_GGUF_ERROR(b, "tensor count");
}

TEST(GgufCorrupt, KeyCountBeyondFile) {
  Bytes b = base_bytes();
  patch_u64(b, 16, uint64_t{1} << 40);
  EXPECT_GGUF_ERROR(b, "header", "metadata key count", "offset 16");
}

TEST(GgufCorrupt, CountsTogetherBeyondFile) {
  // Each count alone fits, both together do not.
  RawBuilder r;
  r.header(3, 1, 2).zeros(40);  // 40 bytes: < 2*14 + 33
  EXPECT_GGUF_ERROR(r.b, "2 metadata keys and 1 tensor infos cannot fit");
}

TEST(GgufCorrupt, KeyLengthBeyondFile) {
  Bytes b = base_bytes();
  const uint64_t at = record_offset(b, "general.name");
  patch_u64(b, at, uint64_t{1} << 50);
  EXPECT_GGUF_ERROR(b, fmt::format("key #1 (at offset {})", at), "length 1125899906842624");
}

TEST(GgufCorrupt, EmptyKey) {
  RawBuilder r;
  r.header(3, 0, 1).str("").u32(4).u32(7);
  EXPECT_GGUF_ERROR(r.b, "key #0 (at offset 24): key is empty");
}

TEST(GgufCorrupt, KeysNeedNotBeUtf8) {
  RawBuilder r;
  r.header(3, 0, 1).str("\xff\xfe.key").u32(4).u32(7);
  auto f = GgufFile::parse(r.b);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(*(*f)->get_uint("\xff\xfe.key"), 7u);
}

TEST(GgufCorrupt, DuplicateKey) {
  GgufWriter w = base_writer();
  w.set("dup.a", V::u32(1)).set("dup.b", V::u32(2));
  Bytes b = *w.to_bytes();
  const uint64_t first = record_offset(b, "dup.a");
  const uint64_t second = find_bytes(b, "dup.b");
  b[second + 4] = 'a';
  EXPECT_GGUF_ERROR(b, fmt::format("key 'dup.a' (at offset {}): duplicate key", second - 8),
                    fmt::format("first at offset {}", first));
}

TEST(GgufCorrupt, UnknownValueType) {
  Bytes b = base_bytes();
  KvAt kv = kv_at(b, "general.name");
  patch_u32(b, kv.type_at, 13);
  EXPECT_GGUF_ERROR(b, key_where(b, "general.name"), "value type 13",
                    fmt::format("offset {}", kv.type_at));
}

TEST(GgufCorrupt, UnknownArrayElementType) {
  Bytes b = base_bytes();
  KvAt kv = kv_at(b, "test.list");
  patch_u32(b, kv.value_at, 99);
  EXPECT_GGUF_ERROR(b, key_where(b, "test.list"), "array element type 99");
}

TEST(GgufCorrupt, ArrayLengthBeyondFile) {
  Bytes b = base_bytes();
  KvAt kv = kv_at(b, "test.list");
  patch_u64(b, kv.value_at + 4, uint64_t{1} << 61);  // * 4 bytes overflows too
  EXPECT_GGUF_ERROR(b, key_where(b, "test.list"), "array of 2305843009213693952 int32");
  patch_u64(b, kv.value_at + 4, 1000);
  EXPECT_GGUF_ERROR(b, key_where(b, "test.list"), "needs 4000 bytes");
}

TEST(GgufCorrupt, StringArrayCountBeyondFile) {
  Bytes b = base_bytes();
  KvAt kv = kv_at(b, "test.strings");
  patch_u64(b, kv.value_at + 4, uint64_t{1} << 62);
  EXPECT_GGUF_ERROR(b, key_where(b, "test.strings"), "strings", "cannot fit");
}

TEST(GgufCorrupt, StringElementLengthBeyondFile) {
  Bytes b = base_bytes();
  KvAt kv = kv_at(b, "test.strings");
  const uint64_t second_elem = kv.value_at + 12 + 8 + 2;  // after "aa"
  patch_u64(b, second_elem, uint64_t{1} << 40);
  EXPECT_GGUF_ERROR(b, key_where(b, "test.strings"),
                    fmt::format("string element 1 at offset {}", second_elem), "exceeds");
}

TEST(GgufCorrupt, StringValueLengthBeyondFile) {
  Bytes b = base_bytes();
  KvAt kv = kv_at(b, "general.name");
  patch_u64(b, kv.value_at, b.size());
  EXPECT_GGUF_ERROR(b, key_where(b, "general.name"), "string value",
                    fmt::format("offset {}", kv.value_at));
}

TEST(GgufCorrupt, AlignmentMustBeUint32) {
  for (const V& v : {V::u64(32), V::i32(32), V::string("32"), V::array<uint32_t>({32})}) {
    GgufWriter w = base_writer();
    w.set("general.alignmenX", v);  // the writer refuses a bad alignment: patch the name after
    Bytes b = *w.to_bytes();
    b[find_bytes(b, "general.alignmenX") + 16] = 't';
    EXPECT_GGUF_ERROR(b, key_where(b, "general.alignment"), "must be uint32");
  }
}

TEST(GgufCorrupt, AlignmentMustBeAPowerOfTwo) {
  for (uint32_t a : {0u, 3u, 48u, 0xFFFFFFFFu}) {
    GgufWriter w = base_writer();
    w.set("general.alignmenX", V::u32(a));
    Bytes b = *w.to_bytes();
    b[find_bytes(b, "general.alignmenX") + 16] = 't';
    EXPECT_GGUF_ERROR(b, key_where(b, "general.alignment"),
                      fmt::format("alignment {} is not a power of two", a));
  }
}

TEST(GgufCorrupt, EmptyTensorName) {
  RawBuilder r;
  r.header(3, 1, 0).str("").u32(1).u64(4).u32(0).u64(0).pad(32).zeros(32);
  EXPECT_GGUF_ERROR(r.b, "tensor #0 (tensor info at offset 24): name is empty");
}

TEST(GgufCorrupt, DuplicateTensorName) {
  GgufWriter w = base_writer();
  w.add_tensor("dup.x", tensor::DType::kF32, {1}, Bytes(4));
  w.add_tensor("dup.y", tensor::DType::kF32, {1}, Bytes(4));
  Bytes b = *w.to_bytes();
  const uint64_t first = record_offset(b, "dup.x");
  const uint64_t second = find_bytes(b, "dup.y");
  b[second + 4] = 'x';
  EXPECT_GGUF_ERROR(b, fmt::format("tensor 'dup.x' (tensor info at offset {})", second - 8),
                    "duplicate tensor name", fmt::format("first tensor info at offset {}", first));
}

TEST(GgufCorrupt, NDimsOutOfRange) {
  for (uint32_t n : {0u, 5u, 0xFFFFFFFFu}) {
    Bytes b = base_bytes();
    InfoAt t = info_at(b, "tensor.one", 2);
    patch_u32(b, t.n_dims_at, n);
    EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.one"),
                      fmt::format("n_dims at offset {} is {}", t.n_dims_at, n));
  }
}

TEST(GgufCorrupt, ZeroDim) {
  Bytes b = base_bytes();
  InfoAt t = info_at(b, "tensor.one", 2);
  patch_u64(b, t.dims_at + 8, 0);
  EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.one"),
                    fmt::format("dim 1 (at offset {}) is 0", t.dims_at + 8));
}

TEST(GgufCorrupt, UnknownTensorType) {
  for (uint32_t id : {4u, 5u, 31u, 99u, 0xFFFFFFFFu}) {  // 4, 5 were Q4_2/Q4_3, 31-33 removed
    Bytes b = base_bytes();
    InfoAt t = info_at(b, "tensor.two", 2);
    patch_u32(b, t.type_at, id);
    EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.two"),
                      fmt::format("unknown tensor type id {}", id));
  }
}

TEST(GgufCorrupt, ElementCountOverflow) {
  Bytes b = base_bytes();
  InfoAt t = info_at(b, "tensor.one", 2);
  patch_u64(b, t.dims_at, uint64_t{1} << 32);
  patch_u64(b, t.dims_at + 8, uint64_t{1} << 32);
  EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.one"), "element count", "overflows");
}

TEST(GgufCorrupt, ByteSizeOverflow) {
  Bytes b = base_bytes();
  InfoAt t = info_at(b, "tensor.one", 2);  // F32: 2^62 x 2 elements fit, 4x that bytes do not
  patch_u64(b, t.dims_at, uint64_t{1} << 62);
  EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.one"), "byte size", "overflows");
}

TEST(GgufCorrupt, RowNotAMultipleOfTheBlockSize) {
  Bytes b = base_bytes();
  InfoAt t = info_at(b, "tensor.two", 2);
  patch_u64(b, t.dims_at, 33);
  EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.two"), "dim 0 (33)", "Q8_0 block size 32");
}

TEST(GgufCorrupt, UnalignedTensorOffset) {
  Bytes b = base_bytes();
  InfoAt t = info_at(b, "tensor.two", 2);
  uint64_t off;
  std::memcpy(&off, b.data() + t.offset_at, 8);
  patch_u64(b, t.offset_at, off + 4);
  EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.two"),
                    fmt::format("data offset {} is not a multiple of the alignment 32", off + 4));
}

TEST(GgufCorrupt, TensorDataBeyondFile) {
  for (uint64_t off : {uint64_t{1} << 20, ~uint64_t{31}}) {  // the second overflows the sum
    Bytes b = base_bytes();
    InfoAt t = info_at(b, "tensor.three", 1);
    patch_u64(b, t.offset_at, off);
    EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.three"), "beyond the end of the file");
  }
}

TEST(GgufCorrupt, OverlappingTensors) {
  Bytes b = base_bytes();
  InfoAt t = info_at(b, "tensor.two", 2);
  patch_u64(b, t.offset_at, 32);  // tensor.one is [0, 64)
  EXPECT_GGUF_ERROR(b, tensor_where(b, "tensor.two"), "overlaps", tensor_where(b, "tensor.one"));
}

TEST(GgufCorrupt, DataSectionBeyondFile) {
  // Tensor infos end at a non-aligned offset and the file ends right there.
  RawBuilder r;
  r.header(3, 1, 0).str("t").u32(1).u64(1).u32(0).u64(0);
  ASSERT_NE(r.b.size() % 32, 0u);
  EXPECT_GGUF_ERROR(r.b, "data section", "beyond the end of the file");
}

TEST(GgufCorrupt, NoTensorsNeedsNoPadding) {
  RawBuilder r;
  r.header(3, 0, 1).str("k").u32(0).u8(5);
  auto f = GgufFile::parse(r.b);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->data_offset(), r.b.size());
}

TEST(GgufCorrupt, ErrorsArePrefixedWithTheFileName) {
  Bytes b = base_bytes();
  b[0] = 'X';
  auto f = GgufFile::parse(b, "some/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().message().rfind("some/model.gguf: ", 0), 0u) << f.status().message();
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace pagoda::format
