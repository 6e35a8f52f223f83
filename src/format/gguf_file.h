// GgufFile: a validated, read-only view of a GGUF v2/v3 file (mmapped). Opening validates
// everything before anything is allocated from file-provided counts: header, every metadata
// value, tensor infos, alignment, offsets and sizes. Metadata strings and tensor data are views
// into the mapping, so a GgufFile must outlive everything read from it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace pagoda::format {

enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view gguf_type_name(GgufType type);

// One metadata value. Scalars are decoded; strings and arrays point into the mapping.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  // Scalars (integers widened; bool as 0/1).
  uint64_t u = 0;
  int64_t i = 0;
  double f = 0;
  std::string_view str;  // kString
  // kArray: element type, count, and the raw bytes of the elements (strings: length-prefixed).
  GgufType elem_type = GgufType::kUint8;
  uint64_t count = 0;
  std::span<const uint8_t> raw;
};

struct GgufKv {
  std::string_view key;
  GgufValue value;
  uint64_t offset = 0;  // file offset of the key, for error messages
};

struct GgufTensorInfo {
  std::string_view name;
  tensor::DType dtype = tensor::DType::kF32;
  uint32_t n_dims = 0;
  uint64_t dims[4] = {1, 1, 1, 1};  // ggml order: dims[0] is the contiguous (row) dimension
  uint64_t num_elements = 0;
  uint64_t offset = 0;      // relative to the start of the data section
  uint64_t size_bytes = 0;  // exact byte size of the data
  const uint8_t* data = nullptr;
};

class GgufFile {
 public:
  // Maps and validates `path`. Errors name the field and its file offset.
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  // Validates an in-memory image (used by tests and the fuzzer); `bytes` must outlive the file.
  static Result<std::unique_ptr<GgufFile>> parse(std::span<const uint8_t> bytes,
                                                 std::string name = "<memory>");

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& name() const { return name_; }

  const std::vector<GgufKv>& metadata() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: not_found if absent, invalid_argument (naming key and type) if mistyped.
  // Integer getters accept any integer type whose value fits.
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;  // float32/64 or any integer
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  // Arrays: element type must match (integers: any integer type that fits).
  Result<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;

 private:
  GgufFile() = default;
  MappedFile file_;  // empty when parsed from memory
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
  friend class GgufParser;
};

}  // namespace pagoda::format
