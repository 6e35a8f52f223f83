// Helpers for GGUF tests: an independent little-endian byte builder (so the writer can be
// checked against bytes laid out by hand from the spec), byte search and patching, and a
// one-call "parse and return the error message".
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "format/gguf_file.h"

namespace pagoda::format::testing {

using Bytes = std::vector<uint8_t>;

// Appends GGUF primitives by hand, following the spec (not the writer).
struct RawBuilder {
  Bytes b;
  RawBuilder& u8(uint8_t v) {
    b.push_back(v);
    return *this;
  }
  RawBuilder& u32(uint32_t v) {
    for (int k = 0; k < 4; ++k)
      b.push_back(static_cast<uint8_t>(v >> (8 * k)));
    return *this;
  }
  RawBuilder& u64(uint64_t v) {
    for (int k = 0; k < 8; ++k)
      b.push_back(static_cast<uint8_t>(v >> (8 * k)));
    return *this;
  }
  RawBuilder& str(std::string_view s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  RawBuilder& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    b.insert(b.end(), {'G', 'G', 'U', 'F'});
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  RawBuilder& pad(uint64_t align) {
    while (b.size() % align != 0)
      b.push_back(0);
    return *this;
  }
  RawBuilder& zeros(size_t n) {
    b.insert(b.end(), n, 0);
    return *this;
  }
};

// Offset of the first occurrence of `needle` in `hay` (fails the test if absent).
inline uint64_t find_bytes(const Bytes& hay, std::string_view needle, uint64_t from = 0) {
  auto it = std::search(hay.begin() + static_cast<std::ptrdiff_t>(from), hay.end(), needle.begin(),
                        needle.end());
  EXPECT_NE(it, hay.end()) << "not found: " << needle;
  return static_cast<uint64_t>(it - hay.begin());
}

// Offset of a key/value record or tensor info whose string is `name` (its u64 length prefix).
inline uint64_t record_offset(const Bytes& bytes, std::string_view name) {
  // Search for length prefix + bytes, so "a.b" does not match inside "a.b.c".
  RawBuilder r;
  r.str(name);
  return find_bytes(bytes, std::string_view(reinterpret_cast<const char*>(r.b.data()), r.b.size()));
}

inline void patch_u32(Bytes& b, uint64_t at, uint32_t v) {
  ASSERT_LE(at + 4, b.size());
  std::memcpy(b.data() + at, &v, 4);
}
inline void patch_u64(Bytes& b, uint64_t at, uint64_t v) {
  ASSERT_LE(at + 8, b.size());
  std::memcpy(b.data() + at, &v, 8);
}

// Parses `bytes`; returns "" on success, else the error message.
inline std::string parse_error(const Bytes& bytes) {
  auto f = GgufFile::parse(bytes, "test.gguf");
  if (f.ok()) return "";
  return f.status().message();
}

}  // namespace pagoda::format::testing

// Expects parsing `bytes` to fail with a message containing every listed substring.
#define EXPECT_GGUF_ERROR(bytes, ...)                                                  \
  do {                                                                                 \
    std::string msg_ = ::pagoda::format::testing::parse_error(bytes);                  \
    EXPECT_FALSE(msg_.empty()) << "parse unexpectedly succeeded";                      \
    for (const std::string& part_ : std::initializer_list<std::string>{__VA_ARGS__}) { \
      EXPECT_NE(msg_.find(part_), std::string::npos)                                   \
          << "error message lacks \"" << part_ << "\": " << msg_;                      \
    }                                                                                  \
  } while (0)
