// Activation layouts: which vec-dot type each weight type uses, and where each array of a
// converted row lives (see act_layout.h).
#include "kernels/cpu/act_layout.h"

#include "base/check.h"

namespace pagoda::kernels::cpu {
namespace {

size_t round_up_64(size_t n) {
  return (n + 63) & ~static_cast<size_t>(63);
}

}  // namespace

ActType act_type_for(tensor::DType weight) {
  using tensor::DType;
  switch (weight) {
    case DType::kF32:
      return ActType::kF32;
    case DType::kF16:
      return ActType::kF16;
    case DType::kBF16:
      return ActType::kBF16;
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0:
      return ActType::kQ8_0;
    case DType::kQ4_1:
    case DType::kQ5_1:
      return ActType::kQ8_1;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return ActType::kQ8_K;
    default:
      PAGODA_CHECK_MSG(false, "no vec-dot type for this weight type");
  }
  return ActType::kF32;
}

ActLayout act_layout(ActType type, int64_t n) {
  PAGODA_CHECK(n >= 0);
  ActLayout l;
  l.type = type;
  l.n = n;
  const auto un = static_cast<size_t>(n);
  switch (type) {
    case ActType::kF32:
    case ActType::kF16:
    case ActType::kBF16:
      l.row_bytes = round_up_64(un * sizeof(float));
      break;
    case ActType::kQ8_0:
    case ActType::kQ8_1: {
      PAGODA_CHECK(n % 32 == 0);
      const size_t nb = un / 32;
      l.d_offset = round_up_64(un);
      l.s_offset = l.d_offset + round_up_64(nb * sizeof(float));
      l.sum_offset = l.s_offset + round_up_64(nb * sizeof(float));
      l.row_bytes = l.sum_offset + round_up_64(nb * sizeof(int16_t));
      break;
    }
    case ActType::kQ8_K: {
      PAGODA_CHECK(n % 256 == 0);
      l.d_offset = round_up_64(un);
      l.s_offset = l.d_offset;
      l.sum_offset = l.d_offset + round_up_64(un / 256 * sizeof(float));
      l.row_bytes = l.sum_offset + round_up_64(un / 16 * sizeof(int16_t));
      break;
    }
  }
  return l;
}

}  // namespace pagoda::kernels::cpu
