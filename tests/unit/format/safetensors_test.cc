// SafetensorsFile: valid files read back exactly; every corrupt case of the reference
// implementation's validation (and duplicate names) fails with its own message.
#include "format/safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace pagoda::format {
namespace {

// 8-byte length + header text + `data` bytes (header padded with spaces to `pad_to`).
std::vector<uint8_t> image(std::string header, const std::vector<uint8_t>& data, size_t pad_to = 8,
                           std::optional<uint64_t> n_override = {}) {
  while (pad_to > 1 && header.size() % pad_to != 0)
    header.push_back(' ');
  const uint64_t n = n_override.value_or(header.size());
  std::vector<uint8_t> out(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i)
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<ptrdiff_t>(header.size()));
  return out;
}

std::vector<uint8_t> bytes_of(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

std::string parse_error(const std::vector<uint8_t>& img) {
  auto f = SafetensorsFile::parse(img, "t.safetensors");
  if (f.ok()) return "<ok>";
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument) << f.status().to_string();
  return f.status().message();
}

// One tensor "w" with the given entry text, and `data_size` zero bytes of data.
std::string one(const std::string& entry, size_t data_size) {
  return parse_error(image("{\"w\":" + entry + "}", std::vector<uint8_t>(data_size)));
}

TEST(SafetensorsTest, ReadsTensorsInDataOrderWithMetadata) {
  // "b" comes first in the data although "a" sorts first by name.
  std::vector<uint8_t> data = bytes_of({1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
  const uint16_t bf16[2] = {0x3f80, 0xc000};  // 1.0, -2.0
  data.insert(data.end(), reinterpret_cast<const uint8_t*>(bf16),
              reinterpret_cast<const uint8_t*>(bf16) + 4);
  const auto img = image(R"({"__metadata__":{"format":"pt","note":"x"},)"
                         R"("a":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},)"
                         R"("b":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})",
                         data);
  auto f = SafetensorsFile::parse(img);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto& ts = (*f)->tensors();
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].name, "b");
  EXPECT_EQ(ts[1].name, "a");
  const StTensor* b = (*f)->find("b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->dtype, StDType::kF32);
  EXPECT_EQ(b->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(b->num_elements, 6u);
  EXPECT_EQ(b->size_bytes(), 24u);
  EXPECT_EQ(b->data, img.data() + (*f)->data_offset());
  float v[6];
  std::memcpy(v, b->data, 24);
  EXPECT_EQ(v[5], 6.0f);
  const StTensor* a = (*f)->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->data, img.data() + (*f)->data_offset() + 24);
  EXPECT_EQ(*SafetensorsFile::compute_dtype(*a), tensor::DType::kBF16);
  EXPECT_EQ((*f)->find("c"), nullptr);
  ASSERT_EQ((*f)->metadata().size(), 2u);
  EXPECT_EQ((*f)->metadata()[0], (std::pair<std::string, std::string>{"format", "pt"}));
}

TEST(SafetensorsTest, EdgeCasesThatAreValid) {
  // No tensors at all.
  EXPECT_EQ(parse_error(image("{}", {})), "<ok>");
  // Header not padded, null metadata, whitespace around the object.
  EXPECT_EQ(parse_error(image(" {\"__metadata__\":null} ", {}, 1)), "<ok>");
  // A scalar (empty shape: one element) and a zero-sized tensor at the same offset.
  EXPECT_EQ(parse_error(image(R"({"e":{"dtype":"F16","shape":[0,5],"data_offsets":[0,0]},)"
                              R"("s":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})",
                              bytes_of({7.0f}))),
            "<ok>");
  // Unknown fields in an entry are ignored (as the reference does).
  EXPECT_EQ(one(R"({"dtype":"U8","shape":[3],"data_offsets":[0,3],"extra":1})", 3), "<ok>");
}

TEST(SafetensorsTest, KnownButUnsupportedDtypesFailOnUse) {
  for (const char* dtype : {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "I32", "U32",
                            "F64", "I64", "U64"}) {
    const auto t = st_dtype_from_name(dtype);
    ASSERT_TRUE(t.has_value()) << dtype;
    const uint32_t size = st_dtype_size(*t);
    const auto img =
        image(fmt::format(R"({{"w":{{"dtype":"{}","shape":[2],"data_offsets":[0,{}]}}}})", dtype,
                          2 * size),
              std::vector<uint8_t>(2 * size));
    auto f = SafetensorsFile::parse(img);
    ASSERT_TRUE(f.ok()) << dtype << ": " << f.status().to_string();
    auto d = SafetensorsFile::compute_dtype((*f)->tensors()[0]);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(d.status().message().find(dtype), std::string::npos) << d.status().message();
    EXPECT_NE(d.status().message().find("\"w\""), std::string::npos);
  }
}

TEST(SafetensorsTest, HeaderLengthErrors) {
  EXPECT_NE(parse_error({1, 2, 3}).find("too short"), std::string::npos);
  EXPECT_NE(parse_error(image("{}", {}, 8, 100'000'001)).find("exceeds the limit"),
            std::string::npos);
  EXPECT_NE(parse_error(image("{}", {}, 8, ~uint64_t{0})).find("exceeds the limit"),
            std::string::npos);
  EXPECT_NE(parse_error(image("{}", {}, 8, 9)).find("runs past the end"), std::string::npos);
  // Not UTF-8 (a lone continuation byte; an overlong '/'; a surrogate).
  for (std::string bad : {std::string("{\"\x80\":1}"), std::string("{\"\xC0\xAF\":1}"),
                          std::string("{\"\xED\xA0\x80\":1}")}) {
    EXPECT_NE(parse_error(image(bad, {})).find("not valid UTF-8"), std::string::npos) << bad;
  }
}

TEST(SafetensorsTest, JsonErrors) {
  EXPECT_NE(parse_error(image("{\"w\":", {})).find("invalid JSON"), std::string::npos);
  EXPECT_NE(parse_error(image("{} {}", {})).find("invalid JSON"), std::string::npos);
  EXPECT_NE(parse_error(image("{/*c*/}", {})).find("invalid JSON"), std::string::npos);
  EXPECT_NE(parse_error(image("[]", {})).find("not a JSON object"), std::string::npos);
  EXPECT_NE(
      parse_error(image(std::string(100, '[') + std::string(100, ']'), {})).find("nesting deeper"),
      std::string::npos);
  const std::string entry = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::string dup =
      parse_error(image("{\"w\":" + entry + ",\"w\":" + entry + "}", bytes_of({1.0f})));
  EXPECT_NE(dup.find("duplicate key \"w\""), std::string::npos) << dup;
  const std::string dup_field = one(R"({"dtype":"F32","dtype":"F16","shape":[1],)"
                                    R"("data_offsets":[0,4]})",
                                    4);
  EXPECT_NE(dup_field.find("duplicate key \"dtype\" in \"w\""), std::string::npos) << dup_field;
}

TEST(SafetensorsTest, MetadataErrors) {
  EXPECT_NE(parse_error(image(R"({"__metadata__":[1]})", {})).find("__metadata__ is not"),
            std::string::npos);
  EXPECT_NE(parse_error(image(R"({"__metadata__":{"k":1}})", {})).find("__metadata__ \"k\""),
            std::string::npos);
}

TEST(SafetensorsTest, EntryErrorsNameTensorAndField) {
  struct Case {
    std::string entry;
    size_t data;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {"[1]", 0, "entry is [1], not an object"},
      {R"({"shape":[1],"data_offsets":[0,4]})", 4, "no dtype"},
      {R"({"dtype":4,"shape":[1],"data_offsets":[0,4]})", 4, "dtype is 4"},
      {R"({"dtype":"F7","shape":[1],"data_offsets":[0,4]})", 4, "unknown dtype \"F7\""},
      {R"({"dtype":"f32","shape":[1],"data_offsets":[0,4]})", 4, "unknown dtype \"f32\""},
      {R"({"dtype":"F32","data_offsets":[0,4]})", 4, "no shape"},
      {R"({"dtype":"F32","shape":1,"data_offsets":[0,4]})", 4, "shape is not an array"},
      {R"({"dtype":"F32","shape":[-1],"data_offsets":[0,4]})", 4, "shape[0] is -1"},
      {R"({"dtype":"F32","shape":[1.0],"data_offsets":[0,4]})", 4, "shape[0] is 1.0"},
      {R"({"dtype":"F32","shape":[1]})", 4, "no data_offsets"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[0]})", 4, "has 1 entries"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[0,4,8]})", 4, "has 3 entries"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":["0","4"]})", 4, "data_offsets[0]"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[4,0]})", 4, "end before they begin"},
      {R"({"dtype":"F32","shape":[2],"data_offsets":[0,4]})", 4, "needs 8 bytes"},
      {R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]})", 4,
       "overflows the element count"},
      {R"({"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]})", 4,
       "overflows the element count"},
      {R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,4]})", 4,
       "overflows the byte size"},
      {R"({"dtype":"F32","shape":[1],"data_offsets":[0,18446744073709551616]})", 4,
       "data_offsets[1]"},
  };
  for (const Case& c : cases) {
    const std::string msg = one(c.entry, c.data);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.entry << " -> " << msg;
    EXPECT_NE(msg.find("tensor \"w\""), std::string::npos) << msg;
  }
}

TEST(SafetensorsTest, OffsetsMustTileTheDataArea) {
  const std::string a = R"("a":{"dtype":"F32","shape":[1],"data_offsets":)";
  const std::string b = R"("b":{"dtype":"F32","shape":[1],"data_offsets":)";
  auto two = [&](const char* oa, const char* ob, size_t data) {
    return parse_error(image("{" + a + oa + "}," + b + ob + "}}", std::vector<uint8_t>(data)));
  };
  EXPECT_EQ(two("[0,4]", "[4,8]", 8), "<ok>");
  EXPECT_NE(two("[4,8]", "[8,12]", 12).find("tensor \"a\": data_offsets begin at 4"),
            std::string::npos);
  EXPECT_NE(two("[0,4]", "[8,12]", 12).find("a gap"), std::string::npos);
  EXPECT_NE(two("[0,4]", "[0,4]", 8).find("overlap tensor \"a\""), std::string::npos);
  EXPECT_NE(two("[0,4]", "[2,6]", 8).find("overlap"), std::string::npos);
  // Data area longer or shorter than what the tensors cover.
  EXPECT_NE(two("[0,4]", "[4,8]", 9).find("cover 8 bytes but the data area after the header has 9"),
            std::string::npos);
  EXPECT_NE(two("[0,4]", "[4,8]", 7).find("cover 8 bytes"), std::string::npos);
  EXPECT_NE(parse_error(image("{}", {0})).find("cover 0 bytes"), std::string::npos);
}

TEST(SafetensorsTest, EveryTruncationFailsCleanly) {
  const auto img = image(R"({"a":{"dtype":"F16","shape":[3],"data_offsets":[0,6]},)"
                         R"("b":{"dtype":"F32","shape":[1],"data_offsets":[6,10]}})",
                         std::vector<uint8_t>(10, 0x11));
  ASSERT_EQ(parse_error(img), "<ok>");
  for (size_t n = 0; n < img.size(); ++n) {
    std::vector<uint8_t> cut(img.begin(), img.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_NE(parse_error(cut), "<ok>") << n;
  }
}

TEST(SafetensorsTest, OpenNamesThePath) {
  const auto dir = std::filesystem::temp_directory_path() / "pagoda_safetensors_test";
  std::filesystem::create_directories(dir);
  const auto path = (dir / "bad.safetensors").string();
  {
    std::ofstream out(path, std::ios::binary);
    const auto img = image("{\"w\":1}", {});
    out.write(reinterpret_cast<const char*>(img.data()), static_cast<std::streamsize>(img.size()));
  }
  auto f = SafetensorsFile::open(path);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find(path), std::string::npos) << f.status().message();
  EXPECT_FALSE(SafetensorsFile::open((dir / "missing.safetensors").string()).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pagoda::format
