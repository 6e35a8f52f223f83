// Reference element-wise ops: SwiGLU's silu(gate) · up (silu from softmax_exp.h), GeGLU's
// tanh-form gelu(gate) · up, soft-capping, max-subtracted
// softmax (sum in double, as ggml), in-place addition, MoE's weighted row sum, and the bandwidth
// probe's sum.
#include <cmath>
#include <limits>

#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/softmax_exp.h"

namespace pagoda::kernels::cpu::reference {

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = silu(gate[i]) * up[i];
  }
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  constexpr float kSqrt2OverPi = 0.79788456080286535588f;
  constexpr float kCubic = 0.044715f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = gate[i];
    const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x)));
    out[i] = g * up[i];
  }
}

void softcap(float* x, int64_t n, float cap) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i)
    x[i] = cap * std::tanh(x[i] * inv);
}

void softmax(float* x, int64_t rows, int64_t dim) {
  for (int64_t r = 0; r < rows; ++r) {
    float* xr = x + r * dim;
    float max = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < dim; ++i)
      max = xr[i] > max ? xr[i] : max;
    if (max == -std::numeric_limits<float>::infinity()) {  // every entry masked: no mass
      for (int64_t i = 0; i < dim; ++i)
        xr[i] = 0;
      continue;
    }
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) {
      xr[i] = std::exp(xr[i] - max);
      sum += static_cast<double>(xr[i]);
    }
    const auto inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < dim; ++i)
      xr[i] *= inv;
  }
}

void add_inplace(float* y, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] += x[i];
}

void weighted_row_sum(const float* src, const int32_t* index, const float* weights, int64_t rows,
                      int64_t k, int64_t dim, float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = out + r * dim;
    for (int64_t d = 0; d < dim; ++d)
      dst[d] = 0;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t i = index[r * k + j];
      if (i < 0) continue;
      const float w = weights[r * k + j];
      const float* s = src + static_cast<int64_t>(i) * dim;
      for (int64_t d = 0; d < dim; ++d)
        dst[d] += w * s[d];
    }
  }
}

uint64_t sum_u64(const uint64_t* p, size_t n) {
  uint64_t s = 0;
  for (size_t i = 0; i < n; ++i)
    s += p[i];
  return s;
}

}  // namespace pagoda::kernels::cpu::reference
