#include "tensor/dtype.h"

#include <array>
#include <cctype>

#include "base/checked_math.h"

namespace pagoda::tensor {
namespace {

// Block layouts from ggml-common.h.
constexpr std::array kInfos = {
    DTypeInfo{DType::kF32, "F32", 1, 4, false, true},
    DTypeInfo{DType::kF16, "F16", 1, 2, false, true},
    DTypeInfo{DType::kQ4_0, "Q4_0", 32, 18, true, true},
    DTypeInfo{DType::kQ4_1, "Q4_1", 32, 20, true, true},
    DTypeInfo{DType::kQ5_0, "Q5_0", 32, 22, true, true},
    DTypeInfo{DType::kQ5_1, "Q5_1", 32, 24, true, true},
    DTypeInfo{DType::kQ8_0, "Q8_0", 32, 34, true, true},
    DTypeInfo{DType::kQ8_1, "Q8_1", 32, 36, true, false},
    DTypeInfo{DType::kQ2_K, "Q2_K", 256, 84, true, true},
    DTypeInfo{DType::kQ3_K, "Q3_K", 256, 110, true, true},
    DTypeInfo{DType::kQ4_K, "Q4_K", 256, 144, true, true},
    DTypeInfo{DType::kQ5_K, "Q5_K", 256, 176, true, true},
    DTypeInfo{DType::kQ6_K, "Q6_K", 256, 210, true, true},
    DTypeInfo{DType::kQ8_K, "Q8_K", 256, 292, true, false},
    DTypeInfo{DType::kIQ2_XXS, "IQ2_XXS", 256, 66, true, false},
    DTypeInfo{DType::kIQ2_XS, "IQ2_XS", 256, 74, true, false},
    DTypeInfo{DType::kIQ3_XXS, "IQ3_XXS", 256, 98, true, false},
    DTypeInfo{DType::kIQ1_S, "IQ1_S", 256, 50, true, false},
    DTypeInfo{DType::kIQ4_NL, "IQ4_NL", 32, 18, true, false},
    DTypeInfo{DType::kIQ3_S, "IQ3_S", 256, 110, true, false},
    DTypeInfo{DType::kIQ2_S, "IQ2_S", 256, 82, true, false},
    DTypeInfo{DType::kIQ4_XS, "IQ4_XS", 256, 136, true, false},
    DTypeInfo{DType::kI8, "I8", 1, 1, false, false},
    DTypeInfo{DType::kI16, "I16", 1, 2, false, false},
    DTypeInfo{DType::kI32, "I32", 1, 4, false, false},
    DTypeInfo{DType::kI64, "I64", 1, 8, false, false},
    DTypeInfo{DType::kF64, "F64", 1, 8, false, false},
    DTypeInfo{DType::kIQ1_M, "IQ1_M", 256, 56, true, false},
    DTypeInfo{DType::kBF16, "BF16", 1, 2, false, true},
    DTypeInfo{DType::kTQ1_0, "TQ1_0", 256, 54, true, false},
    DTypeInfo{DType::kTQ2_0, "TQ2_0", 256, 66, true, false},
};

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t type_id) {
  for (const auto& info : kInfos) {
    if (static_cast<uint32_t>(info.dtype) == type_id) return info;
  }
  return std::nullopt;
}

const DTypeInfo& dtype_info(DType dtype) {
  for (const auto& info : kInfos) {
    if (info.dtype == dtype) return info;
  }
  return kInfos[0];  // unreachable for valid enum values
}

std::string_view dtype_name(DType dtype) {
  return dtype_info(dtype).name;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kInfos) {
    if (iequals(info.name, name)) return info.dtype;
  }
  return std::nullopt;
}

Result<uint64_t> row_size_bytes(DType dtype, uint64_t num_elements) {
  const DTypeInfo& info = dtype_info(dtype);
  if (num_elements % info.block_size != 0) {
    return invalid_argument("{} elements is not a multiple of the {} block size {}", num_elements,
                            info.name, info.block_size);
  }
  auto bytes = checked_mul<uint64_t>(num_elements / info.block_size, info.type_size);
  if (!bytes) return out_of_range("{} x {} bytes overflows", num_elements, info.name);
  return *bytes;
}

}  // namespace pagoda::tensor
