// SafetensorsFile: a validated, read-only view of a .safetensors file (mmapped), checked the way
// the reference implementation (huggingface/safetensors, tensor.rs) checks it, plus duplicate
// names:
//   8 bytes  little-endian u64 N: header length, N <= 100'000'000 and 8 + N <= file size
//   N bytes  UTF-8 JSON object: {"__metadata__": {str: str} (optional),
//                                NAME: {"dtype": "F16", "shape": [d0, d1, ...],
//                                       "data_offsets": [begin, end]}, ...}
//   rest     the data area; offsets are relative to its start.
// Every tensor's byte size (product of its shape × dtype size, overflow-checked) equals
// end - begin; sorted by offset, the tensors tile the data area exactly (first begin 0, each
// begin == previous end, last end == file size - 8 - N): no gaps, no overlap. Names are unique.
// Shapes are row-major (the last dim is contiguous); an empty shape is a scalar; zero-sized
// dims are allowed. Each failure is a distinct invalid_argument naming the tensor and field.
// Data pointers are views into the mapping: a SafetensorsFile must outlive them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "tensor/dtype.h"

namespace pagoda::format {

// The reference implementation's dtypes (names as written in headers: "F16", "BF16", ...).
enum class StDType : uint8_t {
  kBool,
  kU8,
  kI8,
  kF8_E5M2,
  kF8_E4M3,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
};

std::string_view st_dtype_name(StDType dtype);
// Bytes per element.
uint32_t st_dtype_size(StDType dtype);
// Parses a header dtype name (case-sensitive, as the reference does).
std::optional<StDType> st_dtype_from_name(std::string_view name);
// The compute type for F32, F16 and BF16; nullopt for the others (known but unsupported).
std::optional<tensor::DType> st_compute_dtype(StDType dtype);

struct StTensor {
  std::string name;
  StDType dtype = StDType::kF32;
  std::vector<uint64_t> shape;  // row-major: shape.back() is contiguous
  uint64_t num_elements = 1;
  uint64_t begin = 0;  // data_offsets, relative to the data area
  uint64_t end = 0;
  const uint8_t* data = nullptr;  // mapping + data area + begin

  uint64_t size_bytes() const { return end - begin; }
  std::span<const uint8_t> bytes() const { return {data, static_cast<size_t>(end - begin)}; }
};

class SafetensorsFile {
 public:
  static constexpr uint64_t kMaxHeaderSize = 100'000'000;

  // Maps and validates `path`. Error messages start with the path.
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);
  // Validates an in-memory image (tests, the fuzzer); `bytes` must outlive the file.
  static Result<std::unique_ptr<SafetensorsFile>> parse(std::span<const uint8_t> bytes,
                                                        std::string name = "<memory>");

  const std::string& name() const { return name_; }
  std::span<const uint8_t> bytes() const { return bytes_; }
  uint64_t header_size() const { return header_size_; }  // N
  uint64_t data_offset() const { return 8 + header_size_; }

  // Tensors in data order (sorted by offsets).
  const std::vector<StTensor>& tensors() const { return tensors_; }
  const StTensor* find(std::string_view name) const;
  // "__metadata__" entries, sorted by key (empty when absent).
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }

  // The tensor's compute dtype, or unimplemented naming the tensor and its dtype.
  static Result<tensor::DType> compute_dtype(const StTensor& tensor);

 private:
  SafetensorsFile() = default;
  Status parse_header();

  MappedFile file_;
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint64_t header_size_ = 0;
  std::vector<StTensor> tensors_;
  std::vector<std::pair<std::string, std::string>> metadata_;
  std::unordered_map<std::string_view, size_t> name_to_index_;
};

}  // namespace pagoda::format
