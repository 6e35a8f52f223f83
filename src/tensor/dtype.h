// DType: element types of tensors, including ggml's quantised block formats. The numeric values
// are ggml's type ids as stored in GGUF files. A quantised type stores `block_size` elements in
// `type_size` bytes; a row of n elements needs n % block_size == 0.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "base/status.h"

namespace pagoda::tensor {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
};

struct DTypeInfo {
  DType dtype;
  std::string_view name;  // ggml's name: "F32", "Q4_K", ...
  uint32_t block_size;    // elements per block (1 for plain types)
  uint32_t type_size;     // bytes per block
  bool is_quantized;
  bool supported;  // pagoda can dequantise / compute with it
};

// Info for a raw ggml type id, or nullopt if the id is unknown.
std::optional<DTypeInfo> dtype_info(uint32_t type_id);
// Info for a known DType (never fails).
const DTypeInfo& dtype_info(DType dtype);
std::string_view dtype_name(DType dtype);
// Parses "Q4_0", "f16", ... (case-insensitive).
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes needed for a row of `num_elements`; error if not a whole number of blocks or overflow.
Result<uint64_t> row_size_bytes(DType dtype, uint64_t num_elements);

}  // namespace pagoda::tensor
