// GgufWriter: builds a GGUF v3 (or v2) file: metadata of every value type (arrays, arrays of
// arrays), tensor infos with offsets laid out like ggml (each tensor aligned, padded to
// general.alignment), then tensor data that is either held in memory or streamed from a
// callback at write time, so a multi-GB model never has to be in memory. Used by quantize,
// convert and synth, and by tests to craft files (to_bytes()).
//
// The builder methods never fail; mistakes (empty or duplicate tensor names, bad shapes, a data
// size that does not match the shape) are remembered and returned by the write call.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "format/gguf_value.h"
#include "tensor/dtype.h"

namespace pagoda::format {

// An owned metadata value: its type id and the payload bytes exactly as they follow the type id
// in the file (scalar bytes; string: u64 length + bytes; array: u32 element type + u64 count +
// elements).
class GgufWriteValue {
 public:
  static GgufWriteValue u8(uint8_t v) { return scalar(GgufType::kUint8, v); }
  static GgufWriteValue i8(int8_t v) { return scalar(GgufType::kInt8, v); }
  static GgufWriteValue u16(uint16_t v) { return scalar(GgufType::kUint16, v); }
  static GgufWriteValue i16(int16_t v) { return scalar(GgufType::kInt16, v); }
  static GgufWriteValue u32(uint32_t v) { return scalar(GgufType::kUint32, v); }
  static GgufWriteValue i32(int32_t v) { return scalar(GgufType::kInt32, v); }
  static GgufWriteValue u64(uint64_t v) { return scalar(GgufType::kUint64, v); }
  static GgufWriteValue i64(int64_t v) { return scalar(GgufType::kInt64, v); }
  static GgufWriteValue f32(float v) { return scalar(GgufType::kFloat32, v); }
  static GgufWriteValue f64(double v) { return scalar(GgufType::kFloat64, v); }
  static GgufWriteValue boolean(bool v) {
    return scalar(GgufType::kBool, static_cast<uint8_t>(v ? 1 : 0));
  }
  static GgufWriteValue string(std::string_view v);

  // Numeric arrays; T is one of uint8_t..int64_t, float, double (the GGUF element type follows).
  template <typename T>
  static GgufWriteValue array(std::span<const T> values);
  template <typename T>
  static GgufWriteValue array(std::initializer_list<T> values) {
    return array(std::span<const T>(values.begin(), values.size()));
  }
  static GgufWriteValue bool_array(const std::vector<bool>& values);
  static GgufWriteValue string_array(std::span<const std::string> values);
  static GgufWriteValue string_array(std::span<const std::string_view> values);
  static GgufWriteValue string_array(std::initializer_list<std::string_view> values) {
    return string_array(std::span<const std::string_view>(values.begin(), values.size()));
  }
  // An array whose elements are arrays (each may have its own element type). Every element must
  // itself be an array value (PAGODA_CHECK).
  static GgufWriteValue array_of_arrays(std::span<const GgufWriteValue> arrays);
  // A bit-exact copy of a value read by GgufFile (e.g. to carry metadata into a new file).
  static GgufWriteValue copy_of(const GgufValue& value);
  // Any type id with any payload, unchecked: lets tests write invalid values.
  static GgufWriteValue raw(uint32_t type_id, std::vector<uint8_t> payload);

  uint32_t type_id() const { return type_id_; }
  const std::vector<uint8_t>& payload() const { return payload_; }

 private:
  template <typename T>
  static GgufWriteValue scalar(GgufType type, T v);
  template <typename T>
  static constexpr GgufType type_of();
  uint32_t type_id_ = 0;
  std::vector<uint8_t> payload_;
};

class GgufWriter {
 public:
  // Receives the file's bytes in order.
  using ByteSink = std::function<Status(std::span<const uint8_t>)>;
  // Produces one tensor's data at write time by calling `sink` (any number of times) with
  // exactly the tensor's byte size in total.
  using TensorSource = std::function<Status(const ByteSink& sink)>;

  GgufWriter() = default;

  // Version written in the header: 3 (default) or 2 (same layout).
  GgufWriter& set_version(uint32_t version);
  // Sets general.alignment (a power of two; default 32, written only when set).
  GgufWriter& set_alignment(uint32_t alignment);
  // Adds `key`, or replaces its value in place if already set. Setting "general.alignment" to a
  // uint32 is the same as set_alignment().
  GgufWriter& set(std::string key, GgufWriteValue value);

  // Adds a tensor. `dims` in ggml order (dims[0] contiguous), 1..4 of them, all > 0; dims[0] a
  // multiple of the dtype's block size. `data` must be exactly the tensor's byte size.
  GgufWriter& add_tensor(std::string name, tensor::DType dtype, std::vector<uint64_t> dims,
                         std::vector<uint8_t> data);
  // As above, data streamed from `source` at write time.
  GgufWriter& add_tensor(std::string name, tensor::DType dtype, std::vector<uint64_t> dims,
                         TensorSource source);

  uint64_t alignment() const { return alignment_; }
  size_t num_tensors() const { return tensors_.size(); }
  // Bytes before the data section (header + metadata + tensor infos + padding).
  Result<uint64_t> data_offset() const;

  // Writes the whole file to `sink`.
  Status write(const ByteSink& sink) const;
  // Writes `path` (through `path`.tmp, renamed when complete).
  Status write_file(const std::string& path) const;
  // The whole file in memory (tests, small files).
  Result<std::vector<uint8_t>> to_bytes() const;

 private:
  struct Kv {
    std::string key;
    GgufWriteValue value;
  };
  struct Tensor {
    std::string name;
    tensor::DType dtype;
    std::vector<uint64_t> dims;
    uint64_t size_bytes = 0;
    TensorSource source;
  };
  // Offsets are laid out at write time (the alignment may change until then).
  Result<std::vector<uint64_t>> tensor_offsets() const;
  GgufWriter& add_tensor_impl(std::string name, tensor::DType dtype, std::vector<uint64_t> dims,
                              TensorSource source, const uint64_t* data_size);
  void record_error(Status status);
  // Header, metadata, tensor infos and the padding before the data section.
  Result<std::vector<uint8_t>> metadata_bytes() const;

  uint32_t version_ = 3;
  uint64_t alignment_ = 32;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
  Status error_;  // first builder mistake
};

// ---- template definitions ---------------------------------------------------------------------

template <typename T>
constexpr GgufType GgufWriteValue::type_of() {
  if constexpr (std::is_same_v<T, uint8_t>)
    return GgufType::kUint8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return GgufType::kInt8;
  else if constexpr (std::is_same_v<T, uint16_t>)
    return GgufType::kUint16;
  else if constexpr (std::is_same_v<T, int16_t>)
    return GgufType::kInt16;
  else if constexpr (std::is_same_v<T, uint32_t>)
    return GgufType::kUint32;
  else if constexpr (std::is_same_v<T, int32_t>)
    return GgufType::kInt32;
  else if constexpr (std::is_same_v<T, uint64_t>)
    return GgufType::kUint64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return GgufType::kInt64;
  else if constexpr (std::is_same_v<T, float>)
    return GgufType::kFloat32;
  else if constexpr (std::is_same_v<T, double>)
    return GgufType::kFloat64;
  else
    static_assert(sizeof(T) == 0, "not a GGUF numeric type");
}

template <typename T>
GgufWriteValue GgufWriteValue::scalar(GgufType type, T v) {
  GgufWriteValue out;
  out.type_id_ = static_cast<uint32_t>(type);
  out.payload_.resize(sizeof(T));
  std::memcpy(out.payload_.data(), &v, sizeof(T));
  return out;
}

template <typename T>
GgufWriteValue GgufWriteValue::array(std::span<const T> values) {
  GgufWriteValue out;
  out.type_id_ = static_cast<uint32_t>(GgufType::kArray);
  const uint32_t elem = static_cast<uint32_t>(type_of<T>());
  const uint64_t count = values.size();
  out.payload_.resize(4 + 8 + values.size_bytes());
  std::memcpy(out.payload_.data(), &elem, 4);
  std::memcpy(out.payload_.data() + 4, &count, 8);
  if (!values.empty()) std::memcpy(out.payload_.data() + 12, values.data(), values.size_bytes());
  return out;
}

}  // namespace pagoda::format
