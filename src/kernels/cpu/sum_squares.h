// rms_norm's Σx², defined as one exact sequence of operations that the scalar reference and every
// SIMD path follow (so their bits agree, alone or batched): element i's square, rounded to float,
// is added in double to partial sum i mod 16, in element order; the 16 partial sums are then
// combined pairwise (s_j += s_{j+8}, then +4, +2, +1). A SIMD path keeps the partial sums in 16
// double lanes for the whole 16-element steps and hands them to sum_squares_finish. (ggml adds
// every square into one double; its mean, once rounded to float, differs from this one only when
// the two double sums straddle a float rounding boundary.)
#pragma once

#include <cstdint>

namespace pagoda::kernels::cpu {

inline constexpr int kSquareLanes = 16;

// Adds the squares of x[i0, n) to s (element i into s[i % 16]), combines s pairwise and returns
// the total. s holds the partial sums of x[0, i0).
inline double sum_squares_finish(double (&s)[kSquareLanes], const float* x, int64_t i0, int64_t n) {
  for (int64_t i = i0; i < n; ++i)
    s[i % kSquareLanes] += static_cast<double>(x[i] * x[i]);
  for (int w = kSquareLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j)
      s[j] += s[j + w];
  return s[0];
}

}  // namespace pagoda::kernels::cpu
