// GGUF metadata values: the 13 value types, a decoded view of one value (scalars decoded, strings
// and arrays left as views into the file), and helpers to walk array elements and print values.
// Everything here reads bytes that GgufFile has already validated; the walkers still bounds-check
// and simply stop on malformed input, so they never read outside `raw`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pagoda::format {

// Value type ids as stored in the file (ggml's enum gguf_type).
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,    // 1 byte
  kString = 8,  // u64 length + bytes (no NUL)
  kArray = 9,   // u32 element type + u64 count + elements (elements may be arrays)
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint8", "string", ...; "unknown" for ids outside the enum.
std::string_view gguf_type_name(GgufType type);
// The GgufType for a raw id, or nullopt if the id is not one of the 13 types.
std::optional<GgufType> gguf_type_from_id(uint32_t id);
// Bytes of one scalar of `type`; 0 for kString and kArray (variable length).
uint64_t gguf_type_size(GgufType type);
bool gguf_type_is_integer(GgufType type);  // u8..i64 (not bool)
bool gguf_type_is_signed(GgufType type);   // i8, i16, i32, i64

// One metadata value. Scalars are decoded; strings and arrays point into the mapping.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  // Scalars (integers widened; bool as 0/1). For integer types: `u` holds the value when it is
  // non-negative, `i` when it fits int64, `f` always; for floats only `f` is set.
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string_view str;  // kString
  // kArray: element type, count, and the raw bytes of the elements (strings: length-prefixed;
  // nested arrays: each one's element type + count + elements).
  GgufType elem_type = GgufType::kUint8;
  uint64_t count = 0;
  // kArray: the elements' bytes as above. Scalars: the value's bytes as stored (so a value can be
  // copied bit-exactly, e.g. by GgufWriteValue::copy_of). kString: empty (use `str`).
  std::span<const uint8_t> raw;
};

// Decodes a scalar of fixed-size `type` from `bytes` (at least gguf_type_size(type) bytes).
GgufValue gguf_decode_scalar(GgufType type, const uint8_t* bytes);

// Calls fn(index, element) for each element of an array value in order, decoding each element
// as a GgufValue (nested arrays become kArray values). Stops when fn returns false. Returns the
// number of elements visited (less than `array.count` only if fn stopped or `raw` is malformed).
uint64_t gguf_for_each_element(const GgufValue& array,
                               const std::function<bool(uint64_t, const GgufValue&)>& fn);

// Makes arbitrary bytes printable on one line: \n, \t, quotes, backslashes and non-printable
// ASCII are escaped (\xNN); valid UTF-8 passes through. Output keeps at most `max_bytes` bytes
// of the input, then appends "...(N bytes)".
std::string gguf_escape(std::string_view s, size_t max_bytes = 256);

// Renders a value for humans: numbers as numbers, strings quoted and escaped (shortened to
// `max_string` bytes), arrays as "[a, b, c, ...]" with at most `max_elements` elements.
std::string gguf_value_to_string(const GgufValue& value, size_t max_elements = 8,
                                 size_t max_string = 80);

}  // namespace pagoda::format
