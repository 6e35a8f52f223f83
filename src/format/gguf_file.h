// GgufFile: a validated, read-only view of a GGUF v2/v3 file (mmapped). Opening validates
// everything before anything is allocated from file-provided counts: header, every metadata
// value, tensor infos, alignment, offsets and sizes; then the well-known metadata keys
// (gguf_validate.h). Metadata strings and tensor data are views into the mapping, so a GgufFile
// must outlive everything read from it.
//
// Layout (little-endian): "GGUF" u32 version, u64 n_tensors, u64 n_kv; n_kv x (string key,
// u32 type, value); n_tensors x (string name, u32 n_dims, n_dims x u64 dim, u32 ggml type,
// u64 offset); padding to general.alignment (u32, default 32); the data section. Tensor offsets
// are relative to the data section and multiples of the alignment. Keys and tensor names are
// non-empty and unique, but any bytes (not necessarily UTF-8). v1 (32-bit counts) is rejected.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "format/gguf_value.h"
#include "tensor/dtype.h"

namespace pagoda::format {

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
  uint64_t info_offset = 0;  // file offset of this tensor's info record, for error messages

  std::span<const uint8_t> bytes() const { return {data, static_cast<size_t>(size_bytes)}; }
};

class GgufFile {
 public:
  static constexpr uint64_t kDefaultAlignment = 32;
  // Arrays may contain arrays; deeper nesting than this is rejected.
  static constexpr int kMaxArrayDepth = 8;

  // Maps and validates `path`. Errors name the field and its file offset.
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
  // Validates an in-memory image (used by tests and the fuzzer); `bytes` must outlive the file.
  static Result<std::unique_ptr<GgufFile>> parse(std::span<const uint8_t> bytes,
                                                 std::string name = "<memory>");
  // As above, but the file takes ownership of the bytes (e.g. parse(writer.to_bytes())).
  static Result<std::unique_ptr<GgufFile>> parse(std::vector<uint8_t>&& bytes,
                                                 std::string name = "<memory>");

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  const std::string& name() const { return name_; }
  // The whole file image (mapping or the bytes given to parse()).
  std::span<const uint8_t> bytes() const { return bytes_; }

  const std::vector<GgufKv>& metadata() const { return kvs_; }
  const GgufValue* find(std::string_view key) const;
  // The key/value record, with its file offset (nullptr if absent).
  const GgufKv* find_kv(std::string_view key) const;
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;

  // Typed getters: not_found if absent, invalid_argument (naming key, offset and type) if
  // mistyped. Integer getters accept any integer type whose value fits. Messages do not repeat
  // the file name.
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;  // float32/64 or any integer
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string_view> get_string(std::string_view key) const;
  // Arrays: element type must match (integers: any integer type that fits; floats: float32 or
  // float64, the latter narrowed, beyond float range to +-inf).
  Result<std::vector<std::string_view>> get_string_array(std::string_view key) const;
  Result<std::vector<float>> get_float_array(std::string_view key) const;
  Result<std::vector<int64_t>> get_int_array(std::string_view key) const;

 private:
  GgufFile() = default;
  MappedFile file_;             // empty when parsed from memory
  std::vector<uint8_t> owned_;  // the image when parse() was given ownership
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> key_to_index_;
  std::unordered_map<std::string_view, size_t> tensor_name_to_index_;
  friend class GgufParser;
};

}  // namespace pagoda::format
