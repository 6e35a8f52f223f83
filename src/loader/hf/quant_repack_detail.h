// Internals of quant_repack.cc shared with float_quant_repack.cc (the FP8 / INT8 / NF4 paths).
#pragma once

#include <string>
#include <vector>

#include "loader/hf/quant_repack.h"

namespace pagoda::loader::quant_detail {

// The tensor `name` with dtype `dtype` (not_found / invalid_argument naming it); appends the name
// to *used when the tensor exists.
Result<const format::StTensor*> need(const StTensorLookup& lookup, const std::string& name,
                                     format::StDType dtype, std::vector<std::string>* used);

// ok if rows, cols > 0 and rows * cols <= max_elements; else invalid_argument naming `name`.
Status check_dims(const std::string& name, int64_t rows, int64_t cols, int64_t max_elements);

Result<RepackedWeight> repack_fp8(const format::HfQuantConfig& config, const std::string& prefix,
                                  const StTensorLookup& lookup, int64_t max_elements,
                                  std::vector<std::string>* used);
Result<RepackedWeight> repack_int8(const std::string& prefix, const StTensorLookup& lookup,
                                   int64_t max_elements, std::vector<std::string>* used);
Result<RepackedWeight> repack_nf4(const std::string& prefix, const StTensorLookup& lookup,
                                  int64_t max_elements, std::vector<std::string>* used);

}  // namespace pagoda::loader::quant_detail
