// softmax_exp: e^x for the attention softmax and silu (x <= 0), defined as one exact sequence of
// float operations so that the scalar reference and every SIMD path agree bit for bit: round x / ln
// 2 to an integer n, reduce r = x - n ln 2 (ln 2 in two parts), a degree-5 Cephes polynomial with
// fma, then scale by 2^n through the exponent bits. Max error ~2 ulp on [-86, 0]; x < -86 (where
// the result is < 5e-38) and NaN give 0. Not for x > 0.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace pagoda::kernels::cpu {

inline constexpr float kExpLog2e = 1.44269504088896341f;
inline constexpr float kExpLn2Hi = 0.693359375f;
inline constexpr float kExpLn2Lo = -2.12194440e-4f;
inline constexpr float kExpRound = 12582912.f;  // 1.5 * 2^23
inline constexpr float kExpMin = -86.0f;
inline constexpr float kExpP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                   4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

inline float softmax_exp(float x) {
  if (!(x >= kExpMin)) return 0.0f;
  const float n = std::fma(x, kExpLog2e, kExpRound) - kExpRound;
  float r = std::fma(n, -kExpLn2Hi, x);
  r = std::fma(n, -kExpLn2Lo, r);
  float p = kExpP[0];
  for (int i = 1; i < 6; ++i)
    p = std::fma(p, r, kExpP[i]);
  const float y = std::fma(p, r * r, r) + 1.0f;
  const int32_t e = static_cast<int32_t>(n) * (1 << 23);
  return std::bit_cast<float>(std::bit_cast<int32_t>(y) + e);
}

// silu(g) = g · σ(g), with σ from softmax_exp of -|g| (never a positive argument): t = e^-|g|,
// σ = (g >= 0 ? 1 : t) / (1 + t). One exact float sequence, so the reference and every SIMD path
// agree bit for bit. g < -86 gives ±0, +inf gives inf, -inf and NaN give NaN (as g / (1 + e^-g)).
inline float silu(float g) {
  const float t = softmax_exp(-std::fabs(g));
  return g * ((g >= 0.0f ? 1.0f : t) / (1.0f + t));
}

}  // namespace pagoda::kernels::cpu
