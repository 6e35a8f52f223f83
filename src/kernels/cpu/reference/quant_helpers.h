// Small numeric helpers shared by the reference quantisers. They reproduce the C conversions
// ggml's quantisers rely on for in-range values while staying defined for NaN/inf inputs (a
// corrupt tensor must give garbage blocks, never undefined behaviour).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace pagoda::kernels::cpu::reference {

// Round to nearest, ties to even, for |x| <= 2^22 (the magic-number trick ggml's nearest_int
// uses, so results agree exactly). Out-of-range or NaN input yields an unspecified int.
inline int nearest_int(float x) {
  const float shifted = x + 12582912.f;  // 1.5 * 2^23: the integer lands in the mantissa
  const uint32_t bits = std::bit_cast<uint32_t>(shifted);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

// C's float -> integer conversion (truncation toward zero) for x in (lo - 1, hi + 1), clamped to
// [lo, hi] outside it; NaN gives lo.
inline int trunc_clamped(float x, int lo, int hi) {
  if (!(x > static_cast<float>(lo) - 1.0f)) return lo;
  if (!(x < static_cast<float>(hi) + 1.0f)) return hi;
  return static_cast<int>(x);
}

// C's roundf (half away from zero) to an int in [lo, hi]; NaN gives 0.
inline int round_clamped(float x, int lo, int hi) {
  if (x != x) return 0;
  const float r = std::round(x);
  if (r <= static_cast<float>(lo)) return lo;
  if (r >= static_cast<float>(hi)) return hi;
  return static_cast<int>(r);
}

template <typename Block>
inline Block load_block(const void* src, int64_t index) {
  Block b;
  std::memcpy(&b, static_cast<const uint8_t*>(src) + index * static_cast<int64_t>(sizeof(Block)),
              sizeof(Block));
  return b;
}

template <typename Block>
inline void store_block(void* dst, int64_t index, const Block& b) {
  std::memcpy(static_cast<uint8_t*>(dst) + index * static_cast<int64_t>(sizeof(Block)), &b,
              sizeof(Block));
}

}  // namespace pagoda::kernels::cpu::reference
