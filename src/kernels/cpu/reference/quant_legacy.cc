// Reference (de)quantisers for ggml's 32-element legacy blocks: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
// Symmetric types pick the scale from the signed value of largest magnitude (so that value maps
// exactly onto the most negative level); asymmetric types spread [min, max] over the levels.
#include <cfloat>
#include <cmath>

#include "kernels/cpu/block_layouts.h"
#include "kernels/cpu/reference/quant_helpers.h"
#include "kernels/cpu/reference/quant_ref.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {
namespace {

using tensor::fp16_to_fp32;
using tensor::fp32_to_fp16;

uint32_t load_qh(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | (static_cast<uint32_t>(qh[1]) << 8) |
         (static_cast<uint32_t>(qh[2]) << 16) | (static_cast<uint32_t>(qh[3]) << 24);
}

void store_qh(uint32_t v, uint8_t qh[4]) {
  for (int i = 0; i < 4; ++i)
    qh[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The value of largest magnitude, sign kept (first one wins on ties).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f;
  float max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void min_max(const float* x, int n, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

}  // namespace

// ---- dequantisation ------------------------------------------------------------------------

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ4_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>((b.qs[j] & 0xF) - 8) * d;
      y[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ4_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = static_cast<float>(b.qs[j] & 0xF) * d + m;
      y[j + kQK / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ5_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    const uint32_t qh = load_qh(b.qh);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      y[j] = static_cast<float>(((b.qs[j] & 0xF) | hi0) - 16) * d;
      y[j + kQK / 2] = static_cast<float>(((b.qs[j] >> 4) | hi1) - 16) * d;
    }
  }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ5_1>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float m = fp16_to_fp32(b.m);
    const uint32_t qh = load_qh(b.qh);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK / 2; ++j) {
      const int hi0 = static_cast<int>((qh >> j) & 1u) << 4;
      const int hi1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      y[j] = static_cast<float>((b.qs[j] & 0xF) | hi0) * d + m;
      y[j + kQK / 2] = static_cast<float>((b.qs[j] >> 4) | hi1) * d + m;
    }
  }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const auto b = load_block<BlockQ8_0>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK;
    for (int j = 0; j < kQK; ++j)
      y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// ---- quantisation (ggml's quantize_row_*_ref) ----------------------------------------------

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_absmax(x, kQK) / -8;  // the extreme value maps to level 0
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = trunc_clamped(x[j] * id + 8.5f, 0, 15);
      const int q1 = trunc_clamped(x[j + kQK / 2] * id + 8.5f, 0, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 15;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = trunc_clamped((x[j] - min) * id + 0.5f, 0, 15);
      const int q1 = trunc_clamped((x[j + kQK / 2] - min) * id + 0.5f, 0, 15);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    store_block(dst, i, b);
  }
}

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    const float d = signed_absmax(x, kQK) / -16;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_0 b;
    b.d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = trunc_clamped(x[j] * id + 16.5f, 0, 31);
      const int q1 = trunc_clamped(x[j + kQK / 2] * id + 16.5f, 0, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
    }
    store_qh(qh, b.qh);
    store_block(dst, i, b);
  }
}

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float min, max;
    min_max(x, kQK, &min, &max);
    const float d = (max - min) / 31;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ5_1 b;
    b.d = fp32_to_fp16(d);
    b.m = fp32_to_fp16(min);
    uint32_t qh = 0;
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = trunc_clamped((x[j] - min) * id + 0.5f, 0, 31);
      const int q1 = trunc_clamped((x[j + kQK / 2] - min) * id + 0.5f, 0, 31);
      b.qs[j] = static_cast<uint8_t>((q0 & 0xF) | ((q1 & 0xF) << 4));
      qh |= static_cast<uint32_t>(q0 >> 4) << j;
      qh |= static_cast<uint32_t>(q1 >> 4) << (j + kQK / 2);
    }
    store_qh(qh, b.qh);
    store_block(dst, i, b);
  }
}

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i) {
    const float* x = src + i * kQK;
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;
    }
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = fp32_to_fp16(d);
    for (int j = 0; j < kQK; ++j)
      b.qs[j] = static_cast<int8_t>(round_clamped(x[j] * id, -127, 127));
    store_block(dst, i, b);
  }
}

}  // namespace pagoda::kernels::cpu::reference
