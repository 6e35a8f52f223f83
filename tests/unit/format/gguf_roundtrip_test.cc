// Writer -> reader round trips for every value type, arrays (incl. arrays of arrays), tensors
// (held and streamed), versions and alignments; the writer's bytes against a hand-built image;
// the typed getters' conversions and errors; value formatting.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <numeric>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "gguf_test_util.h"
#include "test_support.h"

namespace pagoda::format {
namespace {

using testing::Bytes;
using testing::RawBuilder;
using V = GgufWriteValue;

// `bytes` must outlive the result.
std::unique_ptr<GgufFile> parse_ok(const Bytes& bytes) {
  auto f = GgufFile::parse(std::span<const uint8_t>(bytes), "roundtrip.gguf");
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return nullptr;
  return std::move(f).value();
}
// The result owns `bytes`.
std::unique_ptr<GgufFile> parse_ok(Bytes&& bytes) {
  auto f = GgufFile::parse(std::move(bytes), "roundtrip.gguf");
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  if (!f.ok()) return nullptr;
  return std::move(f).value();
}

Bytes to_bytes(const GgufWriter& w) {
  auto b = w.to_bytes();
  EXPECT_TRUE(b.ok()) << b.status().to_string();
  return b.ok() ? *b : Bytes{};
}

TEST(GgufRoundTrip, EveryScalarType) {
  GgufWriter w;
  w.set("u8", V::u8(250))
      .set("i8", V::i8(-120))
      .set("u16", V::u16(65000))
      .set("i16", V::i16(-32000))
      .set("u32", V::u32(4000000000u))
      .set("i32", V::i32(-2000000000))
      .set("f32", V::f32(1.5f))
      .set("bool_t", V::boolean(true))
      .set("bool_f", V::boolean(false))
      .set("str", V::string("héllo\nworld"))
      .set("empty_str", V::string(""))
      .set("u64", V::u64(std::numeric_limits<uint64_t>::max()))
      .set("i64", V::i64(std::numeric_limits<int64_t>::min()))
      .set("f64", V::f64(-2.25e300));
  Bytes bytes = to_bytes(w);
  auto f = parse_ok(bytes);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->metadata().size(), 14u);
  EXPECT_EQ(f->metadata()[0].key, "u8");  // insertion order kept
  EXPECT_EQ(f->find("u8")->type, GgufType::kUint8);
  EXPECT_EQ(*f->get_uint("u8"), 250u);
  EXPECT_EQ(*f->get_int("i8"), -120);
  EXPECT_EQ(*f->get_uint("u16"), 65000u);
  EXPECT_EQ(*f->get_int("i16"), -32000);
  EXPECT_EQ(*f->get_uint("u32"), 4000000000u);
  EXPECT_EQ(*f->get_int("i32"), -2000000000);
  EXPECT_EQ(*f->get_float("f32"), 1.5);
  EXPECT_EQ(f->find("f32")->type, GgufType::kFloat32);
  EXPECT_TRUE(*f->get_bool("bool_t"));
  EXPECT_FALSE(*f->get_bool("bool_f"));
  EXPECT_EQ(*f->get_string("str"), "héllo\nworld");
  EXPECT_EQ(*f->get_string("empty_str"), "");
  EXPECT_EQ(*f->get_uint("u64"), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(*f->get_int("i64"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(*f->get_float("f64"), -2.25e300);
  EXPECT_EQ(f->find("f64")->type, GgufType::kFloat64);
  // Integers also read as floats.
  EXPECT_EQ(*f->get_float("i16"), -32000.0);
}

TEST(GgufRoundTrip, BoolIsOneByteAndStringsHaveNoTerminator) {
  GgufWriter w;
  w.set("b", V::boolean(true)).set("s", V::string("ab"));
  Bytes bytes = to_bytes(w);
  // Independent layout: header 24 bytes; "b": 8+1 key, u32 type 7, 1 byte value; "s": 8+1 key,
  // u32 type 8, u64 length 2, 'a' 'b'; then padding to 32.
  RawBuilder r;
  r.header(3, 0, 2).str("b").u32(7).u8(1).str("s").u32(8).str("ab").pad(32);
  EXPECT_EQ(bytes, r.b);
}

TEST(GgufRoundTrip, WriterBytesMatchHandBuiltImage) {
  // One key, two tensors, alignment 32: laid out by hand from the spec.
  std::vector<uint8_t> t0(4 * 3);  // F32 [3]
  std::iota(t0.begin(), t0.end(), 1);
  std::vector<uint8_t> t1(2 * 2 * 5);  // F16 [2, 5]
  std::iota(t1.begin(), t1.end(), 100);
  GgufWriter w;
  w.set("general.name", V::string("x"));
  w.add_tensor("a", tensor::DType::kF32, {3}, t0);
  w.add_tensor("bb", tensor::DType::kF16, {2, 5}, t1);
  Bytes bytes = to_bytes(w);

  RawBuilder r;
  r.header(3, 2, 1).str("general.name").u32(8).str("x");
  r.str("a").u32(1).u64(3).u32(0).u64(0);
  r.str("bb").u32(2).u64(2).u64(5).u32(1).u64(32);  // 12 bytes padded to 32
  r.pad(32);
  const uint64_t data_at = r.b.size();
  r.b.insert(r.b.end(), t0.begin(), t0.end());
  r.pad(32);
  r.b.insert(r.b.end(), t1.begin(), t1.end());
  r.pad(32);
  EXPECT_EQ(bytes, r.b);

  auto f = parse_ok(bytes);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->data_offset(), data_at);
  ASSERT_EQ(f->tensors().size(), 2u);
  const GgufTensorInfo* b = f->find_tensor("bb");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, tensor::DType::kF16);
  EXPECT_EQ(b->n_dims, 2u);
  EXPECT_EQ(b->dims[0], 2u);
  EXPECT_EQ(b->dims[1], 5u);
  EXPECT_EQ(b->dims[2], 1u);
  EXPECT_EQ(b->num_elements, 10u);
  EXPECT_EQ(b->size_bytes, 20u);
  EXPECT_EQ(b->offset, 32u);
  EXPECT_EQ(b->data, bytes.data() + data_at + 32);
  EXPECT_EQ(Bytes(b->bytes().begin(), b->bytes().end()), t1);
  EXPECT_EQ(f->find_tensor("missing"), nullptr);
}

TEST(GgufRoundTrip, NumericArraysOfEveryType) {
  GgufWriter w;
  w.set("u8", V::array<uint8_t>({1, 2, 255}))
      .set("i8", V::array<int8_t>({-1, 0, 127}))
      .set("u16", V::array<uint16_t>({1, 65535}))
      .set("i16", V::array<int16_t>({-32768, 5}))
      .set("u32", V::array<uint32_t>({7, 4000000000u}))
      .set("i32", V::array<int32_t>({-7, 8, 9}))
      .set("f32", V::array<float>({0.5f, -1.0f}))
      .set("u64", V::array<uint64_t>({1, uint64_t{1} << 63}))
      .set("i64", V::array<int64_t>({-5, 6}))
      .set("f64", V::array<double>({0.25, 1e100}))
      .set("bools", V::bool_array({true, false, true}))
      .set("empty", V::array<int32_t>({}));
  Bytes bytes = to_bytes(w);
  auto f = parse_ok(bytes);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(*f->get_int_array("u8"), (std::vector<int64_t>{1, 2, 255}));
  EXPECT_EQ(*f->get_int_array("i8"), (std::vector<int64_t>{-1, 0, 127}));
  EXPECT_EQ(*f->get_int_array("u16"), (std::vector<int64_t>{1, 65535}));
  EXPECT_EQ(*f->get_int_array("i16"), (std::vector<int64_t>{-32768, 5}));
  EXPECT_EQ(*f->get_int_array("u32"), (std::vector<int64_t>{7, 4000000000}));
  EXPECT_EQ(*f->get_int_array("i32"), (std::vector<int64_t>{-7, 8, 9}));
  EXPECT_EQ(*f->get_float_array("f32"), (std::vector<float>{0.5f, -1.0f}));
  EXPECT_EQ(*f->get_int_array("i64"), (std::vector<int64_t>{-5, 6}));
  EXPECT_EQ(*f->get_float_array("f64"),
            (std::vector<float>{0.25f, std::numeric_limits<float>::infinity()}));
  EXPECT_TRUE(f->get_int_array("empty")->empty());
  // u64 element 1 does not fit int64: the error names the element.
  auto big = f->get_int_array("u64");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("element 1"), std::string::npos) << big.status().message();

  const GgufValue* bools = f->find("bools");
  ASSERT_NE(bools, nullptr);
  EXPECT_EQ(bools->elem_type, GgufType::kBool);
  EXPECT_EQ(bools->count, 3u);
  EXPECT_EQ(bools->raw.size(), 3u);  // one byte each
  std::vector<bool> seen;
  gguf_for_each_element(*bools, [&](uint64_t, const GgufValue& e) {
    EXPECT_EQ(e.type, GgufType::kBool);
    seen.push_back(e.u != 0);
    return true;
  });
  EXPECT_EQ(seen, (std::vector<bool>{true, false, true}));
  const GgufValue* i16 = f->find("i16");
  EXPECT_EQ(i16->raw.size(), 4u);
}

TEST(GgufRoundTrip, StringArrays) {
  std::vector<std::string> tokens = {"<unk>", "", "a b", std::string("\0x\xff", 3), "▁the"};
  GgufWriter w;
  w.set("tokens", V::string_array(tokens)).set("merges", V::string_array({"a b", "c d"}));
  auto f = parse_ok(to_bytes(w));
  ASSERT_NE(f, nullptr);
  auto got = f->get_string_array("tokens");
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), tokens.size());
  for (size_t k = 0; k < tokens.size(); ++k)
    EXPECT_EQ((*got)[k], tokens[k]);
  EXPECT_EQ(*f->get_string_array("merges"), (std::vector<std::string_view>{"a b", "c d"}));
}

TEST(GgufRoundTrip, ArraysOfArrays) {
  const V inner[] = {V::array<int32_t>({1, 2, 3}), V::string_array({"x", "yz"}),
                     V::array<float>({})};
  const V nested[] = {V::array_of_arrays(inner), V::array<uint8_t>({9})};
  GgufWriter w;
  w.set("nested", V::array_of_arrays(nested));
  Bytes bytes = to_bytes(w);
  auto f = parse_ok(bytes);
  ASSERT_NE(f, nullptr);
  const GgufValue* v = f->find("nested");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->type, GgufType::kArray);
  EXPECT_EQ(v->elem_type, GgufType::kArray);
  EXPECT_EQ(v->count, 2u);
  std::vector<GgufValue> outer;
  gguf_for_each_element(*v, [&](uint64_t, const GgufValue& e) {
    outer.push_back(e);
    return true;
  });
  ASSERT_EQ(outer.size(), 2u);
  EXPECT_EQ(outer[0].elem_type, GgufType::kArray);
  EXPECT_EQ(outer[0].count, 3u);
  EXPECT_EQ(outer[1].elem_type, GgufType::kUint8);
  EXPECT_EQ(outer[1].count, 1u);
  std::vector<GgufValue> level2;
  gguf_for_each_element(outer[0], [&](uint64_t, const GgufValue& e) {
    level2.push_back(e);
    return true;
  });
  ASSERT_EQ(level2.size(), 3u);
  EXPECT_EQ(level2[0].elem_type, GgufType::kInt32);
  EXPECT_EQ(level2[1].elem_type, GgufType::kString);
  EXPECT_EQ(level2[2].count, 0u);
  EXPECT_EQ(gguf_value_to_string(*v), "[[[1, 2, 3], [\"x\", \"yz\"], []], [9]]");
  // Not a flat array: the typed getters refuse it.
  EXPECT_FALSE(f->get_int_array("nested").ok());
}

TEST(GgufRoundTrip, NestingDepthLimit) {
  V v = V::array<int32_t>({1});
  for (int d = 1; d < GgufFile::kMaxArrayDepth; ++d)
    v = V::array_of_arrays(std::span(&v, 1));
  GgufWriter ok_writer;
  ok_writer.set("deep", v);
  EXPECT_NE(parse_ok(to_bytes(ok_writer)), nullptr);
  V deeper = V::array_of_arrays(std::span(&v, 1));
  GgufWriter w;
  w.set("deep", deeper);
  EXPECT_GGUF_ERROR(to_bytes(w), "key 'deep'", "deeper than");
}

TEST(GgufRoundTrip, OwningParseKeepsTheBytesAlive) {
  GgufWriter w;
  w.set("s", V::string("still here"));
  w.add_tensor("t", tensor::DType::kF32, {2}, Bytes(8, 0x5a));
  auto f = GgufFile::parse(to_bytes(w), "owned");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*(*f)->get_string("s"), "still here");
  EXPECT_EQ((*f)->find_tensor("t")->data[7], 0x5a);
  EXPECT_EQ((*f)->find_tensor("t")->data, (*f)->bytes().data() + (*f)->data_offset());
}

TEST(GgufRoundTrip, ReplacingAKeyKeepsItsPosition) {
  GgufWriter w;
  w.set("a", V::u32(1)).set("b", V::u32(2)).set("a", V::string("again"));
  auto f = parse_ok(to_bytes(w));
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].key, "a");
  EXPECT_EQ(*f->get_string("a"), "again");
}

TEST(GgufRoundTrip, AlignmentAndVersion2) {
  for (uint32_t align : {1u, 8u, 64u, 4096u}) {
    GgufWriter w;
    w.set_version(2).set_alignment(align);
    w.add_tensor("t0", tensor::DType::kF32, {5}, Bytes(20, 1));
    w.add_tensor("t1", tensor::DType::kQ8_0, {32, 2}, Bytes(68, 2));
    Bytes bytes = to_bytes(w);
    EXPECT_EQ(bytes.size() % align, 0u);
    auto f = parse_ok(bytes);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->version(), 2u);
    EXPECT_EQ(f->alignment(), align);
    EXPECT_EQ(*f->get_uint("general.alignment"), align);
    EXPECT_EQ(f->data_offset() % align, 0u);
    const GgufTensorInfo* t1 = f->find_tensor("t1");
    EXPECT_EQ(t1->offset % align, 0u);
    EXPECT_GE(t1->offset, 20u);
    EXPECT_EQ(t1->size_bytes, 68u);
    EXPECT_EQ(t1->data[0], 2);
  }
}

TEST(GgufRoundTrip, AllTensorShapesAndTypes) {
  GgufWriter w;
  w.add_tensor("q4k", tensor::DType::kQ4_K, {256, 3}, Bytes(144 * 3, 7));
  w.add_tensor("q6k", tensor::DType::kQ6_K, {512, 1, 2}, Bytes(210 * 4, 8));
  w.add_tensor("bf16", tensor::DType::kBF16, {2, 3, 4, 5}, Bytes(2 * 120, 9));
  w.add_tensor("q4_0", tensor::DType::kQ4_0, {64}, Bytes(36, 10));
  auto f = parse_ok(to_bytes(w));
  ASSERT_NE(f, nullptr);
  const GgufTensorInfo* bf = f->find_tensor("bf16");
  EXPECT_EQ(bf->n_dims, 4u);
  EXPECT_EQ(bf->num_elements, 120u);
  EXPECT_EQ(bf->size_bytes, 240u);
  EXPECT_EQ(f->find_tensor("q6k")->num_elements, 1024u);
  EXPECT_EQ(f->find_tensor("q6k")->size_bytes, 840u);
  for (const GgufTensorInfo& t : f->tensors()) {
    for (uint64_t k = 0; k < t.size_bytes; ++k)
      ASSERT_EQ(t.data[k], t.data[0]);
  }
}

TEST(GgufRoundTrip, StreamedTensorData) {
  static constexpr uint64_t n = 100000;  // F32 elements produced in uneven chunks
  GgufWriter w;
  w.add_tensor("big", tensor::DType::kF32, {n}, [](const GgufWriter::ByteSink& sink) -> Status {
    std::vector<float> chunk;
    for (uint64_t start = 0; start < n;) {
      uint64_t len = std::min<uint64_t>(777, n - start);
      chunk.resize(len);
      for (uint64_t k = 0; k < len; ++k)
        chunk[k] = static_cast<float>(start + k);
      PAGODA_RETURN_IF_ERROR(sink(std::span<const uint8_t>(
          reinterpret_cast<const uint8_t*>(chunk.data()), len * sizeof(float))));
      start += len;
    }
    return Status();
  });
  auto f = parse_ok(to_bytes(w));
  ASSERT_NE(f, nullptr);
  const GgufTensorInfo* t = f->find_tensor("big");
  ASSERT_NE(t, nullptr);
  for (uint64_t k = 0; k < n; k += 997) {
    float v;
    std::memcpy(&v, t->data + 4 * k, 4);
    ASSERT_EQ(v, static_cast<float>(k));
  }
}

TEST(GgufRoundTrip, WriteFileAndOpen) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("pagoda_gguf_roundtrip_" + std::to_string(::getpid()) + ".gguf");
  GgufWriter w;
  w.set("general.architecture", V::string("llama"));
  w.add_tensor("w", tensor::DType::kF16, {4, 4}, Bytes(32, 3));
  ASSERT_TRUE(w.write_file(path.string()).ok());
  EXPECT_FALSE(std::filesystem::exists(path.string() + ".tmp"));
  auto f = GgufFile::open(path.string());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ((*f)->name(), path.string());
  EXPECT_EQ(*(*f)->get_string("general.architecture"), "llama");
  EXPECT_EQ((*f)->find_tensor("w")->data[31], 3);
  std::filesystem::remove(path);

  auto missing = GgufFile::open(path.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(GgufWriterErrors, ReportedAtWriteTime) {
  auto error_of = [](const GgufWriter& w) { return w.to_bytes().status().message(); };
  {
    GgufWriter w;
    w.add_tensor("t", tensor::DType::kQ4_0, {33}, Bytes(18));
    EXPECT_NE(error_of(w).find("block size"), std::string::npos) << error_of(w);
  }
  {
    GgufWriter w;
    w.add_tensor("t", tensor::DType::kF32, {2}, Bytes(7));
    EXPECT_NE(error_of(w).find("7 bytes"), std::string::npos) << error_of(w);
  }
  {
    GgufWriter w;
    w.add_tensor("t", tensor::DType::kF32, {1}, Bytes(4))
        .add_tensor("t", tensor::DType::kF32, {1}, Bytes(4));
    EXPECT_NE(error_of(w).find("duplicate"), std::string::npos) << error_of(w);
  }
  {
    GgufWriter w;
    w.add_tensor("t", tensor::DType::kF32, {2, 0}, Bytes(0));
    EXPECT_NE(error_of(w).find("dim 1"), std::string::npos) << error_of(w);
  }
  {
    GgufWriter w;
    w.set_alignment(48);
    EXPECT_NE(error_of(w).find("power of two"), std::string::npos) << error_of(w);
  }
  {
    GgufWriter w;
    w.set("", V::u8(1));
    EXPECT_NE(error_of(w).find("empty"), std::string::npos) << error_of(w);
  }
  {
    GgufWriter w;  // a source that under-delivers
    w.add_tensor("s", tensor::DType::kF32, {4}, [](const GgufWriter::ByteSink& sink) {
      const uint8_t b[8] = {};
      return sink(b);
    });
    EXPECT_NE(error_of(w).find("8 of 16"), std::string::npos) << error_of(w);
  }
  {
    GgufWriter w;  // and one that over-delivers
    w.add_tensor("s", tensor::DType::kF32, {1}, [](const GgufWriter::ByteSink& sink) {
      const uint8_t b[8] = {};
      return sink(b);
    });
    EXPECT_NE(error_of(w).find("more than 4"), std::string::npos) << error_of(w);
  }
}

TEST(GgufGetters, MistypedAndMissing) {
  GgufWriter w;
  w.set("neg", V::i32(-3)).set("s", V::string("x")).set("huge", V::u64(uint64_t{1} << 63));
  w.set("f", V::f32(2.0f)).set("b", V::boolean(true)).set("arr", V::array<float>({1.0f}));
  Bytes bytes = to_bytes(w);
  auto f = parse_ok(bytes);
  ASSERT_NE(f, nullptr);
  const uint64_t neg_at = testing::record_offset(bytes, "neg");

  auto missing = f->get_uint("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);

  auto neg = f->get_uint("neg");
  ASSERT_FALSE(neg.ok());
  EXPECT_EQ(neg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(neg.status().message().find("'neg'"), std::string::npos);
  EXPECT_NE(neg.status().message().find(fmt::format("offset {}", neg_at)), std::string::npos)
      << neg.status().message();
  EXPECT_EQ(*f->get_int("neg"), -3);

  EXPECT_FALSE(f->get_int("huge").ok());
  EXPECT_EQ(*f->get_uint("huge"), uint64_t{1} << 63);
  auto s_as_int = f->get_int("s");
  ASSERT_FALSE(s_as_int.ok());
  EXPECT_NE(s_as_int.status().message().find("string"), std::string::npos);
  EXPECT_FALSE(f->get_uint("f").ok());    // floats are not integers
  EXPECT_FALSE(f->get_uint("b").ok());    // nor are bools
  EXPECT_FALSE(f->get_bool("neg").ok());  // nor integers bools
  EXPECT_FALSE(f->get_string("arr").ok());
  EXPECT_FALSE(f->get_float("s").ok());
  EXPECT_FALSE(f->get_string_array("arr").ok());
  auto arr_as_int = f->get_int_array("arr");
  ASSERT_FALSE(arr_as_int.ok());
  EXPECT_NE(arr_as_int.status().message().find("array of float32"), std::string::npos);
  EXPECT_FALSE(f->get_float_array("s").ok());
}

TEST(GgufValueFormat, ToStringAndEscape) {
  GgufWriter w;
  w.set("s", V::string(std::string("a\"b\\c\n\x01\xff", 8)))
      .set("long", V::string(std::string(200, 'z')))
      .set("arr", V::array<int32_t>({1, -2, 3, 4}))
      .set("f", V::f32(0.5f))
      .set("b", V::boolean(false))
      .set("i", V::i64(-9));
  auto f = parse_ok(to_bytes(w));
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(gguf_value_to_string(*f->find("s")), "\"a\\\"b\\\\c\\n\\x01\\xff\"");
  EXPECT_EQ(gguf_value_to_string(*f->find("long"), 8, 10), "\"zzzzzzzzzz...(200 bytes)\"");
  EXPECT_EQ(gguf_value_to_string(*f->find("arr")), "[1, -2, 3, 4]");
  EXPECT_EQ(gguf_value_to_string(*f->find("arr"), 2), "[1, -2, ...]");
  EXPECT_EQ(gguf_value_to_string(*f->find("f")), "0.5");
  EXPECT_EQ(gguf_value_to_string(*f->find("b")), "false");
  EXPECT_EQ(gguf_value_to_string(*f->find("i")), "-9");
  // Valid UTF-8 passes through; a multi-byte character is never cut in half.
  EXPECT_EQ(gguf_escape("▁the"), "▁the");
  EXPECT_EQ(gguf_escape("a▁", 2), "a...(4 bytes)");
  EXPECT_EQ(gguf_escape("\xe2\x96", 10), "\\xe2\\x96");
}

}  // namespace
}  // namespace pagoda::format
