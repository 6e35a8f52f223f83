// Reference (de)quantisers for ggml's 256-element K-quant super-blocks: Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K. A super-block holds 8 or 16 sub-blocks; each sub-block's scale (and min) is itself
// quantised to 4, 6 or 8 bits against one f16 super-scale. Quantisation searches each
// sub-block's scale (scale_search.h), quantises the scales, then re-quantises the values against
// the scales actually stored, exactly as ggml's quantize_row_*_ref do.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/cpu/block_layouts.h"
#include "kernels/cpu/reference/quant_helpers.h"
#include "kernels/cpu/reference/quant_ref.h"
#include "kernels/cpu/reference/scale_search.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {
namespace {

using tensor::fp16_to_fp32;
using tensor::fp32_to_fp16;

constexpr float kGroupMaxEps = 1e-15f;

int clamp_level(int l, int lo, int hi) {
  return std::max(lo, std::min(hi, l));
}

// Q2_K/Q3_K: four 2-bit planes, element n of each 128-half at shift 2 * ((n % 128) / 32).
void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < kQK_K; h += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[h / 4 + l] = static_cast<uint8_t>(L[h + l] | (L[h + l + 32] << 2) | (L[h + l + 64] << 4) |
                                           (L[h + l + 96] << 6));
    }
  }
}

int unpack_2bit(const uint8_t* qs, int n) {
  const int h = n / 128;
  const int r = n % 128;
  return (qs[32 * h + r % 32] >> (2 * (r / 32))) & 3;
}

// Q4_K/Q5_K: store 6-bit scale ls and min lm of sub-block j (inverse of k4_scale_min). Must be
// called for j = 0..7 in order on a zeroed array.
void pack_k4_scale_min(int j, uint8_t ls, uint8_t lm, uint8_t* s) {
  if (j < 4) {
    s[j] = ls;
    s[j + 4] = lm;
  } else {
    s[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
    s[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
    s[j] |= static_cast<uint8_t>((lm >> 4) << 6);
  }
}

// Q4_K/Q5_K quantisation shared by both: per-sub-block affine fit, 6-bit scales and mins, then
// levels in [0, nmax] against the stored scales. Fills d, dmin, scales and L.
void quantize_k4_levels(const float* x, int nmax, float rmin, float rdelta, int nstep,
                        uint16_t* d_out, uint16_t* dmin_out, uint8_t* scales_out, uint8_t* L) {
  float scales[8];
  float mins[8];
  float weights[32];
  uint8_t Laux[32];
  float max_scale = 0;
  float max_min = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l)
      sum_x2 += xs[l] * xs[l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l)
      weights[l] = av_x + std::fabs(xs[l]);
    scales[j] = make_qkx2_quants(32, nmax, xs, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta,
                                 nstep, false);
    if (scales[j] > max_scale) max_scale = scales[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  std::memset(scales_out, 0, 12);
  for (int j = 0; j < 8; ++j) {
    // ggml stores nearest_int into a uint8_t before clamping: negative values wrap, then clamp.
    const auto ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
    const auto lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
    pack_k4_scale_min(j, std::min<uint8_t>(63, ls), std::min<uint8_t>(63, lm), scales_out);
  }
  *d_out = fp32_to_fp16(max_scale / 63.f);
  *dmin_out = fp32_to_fp16(max_min / 63.f);
  const float d_all = fp16_to_fp32(*d_out);
  const float dmin_all = fp16_to_fp32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, m;
    k4_scale_min(j, scales_out, &sc, &m);
    const float d = d_all * static_cast<float>(sc);
    if (d == 0.0f) continue;
    const float dm = dmin_all * static_cast<float>(m);
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] =
          static_cast<uint8_t>(clamp_level(nearest_int((x[32 * j + i] + dm) / d), 0, nmax));
    }
  }
}

}  // namespace

// ---- dequantisation ------------------------------------------------------------------------

void dequantize_row_q2_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ2_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int s = 0; s < 16; ++s) {
      const float dl = d * static_cast<float>(b.scales[s] & 0xF);
      const float ml = dmin * static_cast<float>(b.scales[s] >> 4);
      for (int e = 16 * s; e < 16 * s + 16; ++e) {
        y[e] = dl * static_cast<float>(unpack_2bit(b.qs, e)) - ml;
      }
    }
  }
}

void dequantize_row_q3_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ3_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    for (int s = 0; s < 16; ++s) {
      const float dl = d * static_cast<float>(q3_k_scale(s, b.scales) - 32);
      for (int e = 16 * s; e < 16 * s + 16; ++e) {
        const bool high = (b.hmask[e % 32] >> (e / 32)) & 1;
        y[e] = dl * static_cast<float>(unpack_2bit(b.qs, e) - (high ? 0 : 4));
      }
    }
  }
}

void dequantize_row_q4_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ4_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k4_scale_min(s, b.scales, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = b.qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        y[32 * s + l] = dl * static_cast<float>((q[l] >> shift) & 0xF) - ml;
      }
    }
  }
}

void dequantize_row_q5_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ5_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    const float dmin = fp16_to_fp32(b.dmin);
    float* y = dst + i * kQK_K;
    for (int s = 0; s < 8; ++s) {
      uint8_t sc, m;
      k4_scale_min(s, b.scales, &sc, &m);
      const float dl = d * static_cast<float>(sc);
      const float ml = dmin * static_cast<float>(m);
      const uint8_t* q = b.qs + 32 * (s / 2);
      const int shift = 4 * (s % 2);
      for (int l = 0; l < 32; ++l) {
        const int high = ((b.qh[l] >> s) & 1) << 4;
        y[32 * s + l] = dl * static_cast<float>(((q[l] >> shift) & 0xF) + high) - ml;
      }
    }
  }
}

void dequantize_row_q6_k(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const auto b = load_block<BlockQ6_K>(src, i);
    const float d = fp16_to_fp32(b.d);
    float* y = dst + i * kQK_K;
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128;
      const int k = (e % 128) / 32;
      const int l = e % 32;
      const uint8_t low_byte = b.ql[64 * h + l + 32 * (k & 1)];
      const int low = k < 2 ? (low_byte & 0xF) : (low_byte >> 4);
      const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
      const int q = (low | (high << 4)) - 32;
      y[e] = d * static_cast<float>(b.scales[e / 16]) * static_cast<float>(q);
    }
  }
}

// ---- quantisation (ggml's quantize_row_*_ref) ----------------------------------------------

void quantize_row_q2_k(const float* src, void* dst, int64_t n) {
  constexpr float kQ4Scale = 15.f;
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    uint8_t Laux[16];
    float weights[16];
    float scales[16];
    float mins[16];
    float max_scale = 0;  // mins are subtracted, so scales are >= 0
    float max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l)
        weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f,
                                   0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    BlockQ2_K b;
    std::memset(&b, 0, sizeof(b));
    if (max_scale > 0) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < 16; ++j)
        b.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
      b.d = fp32_to_fp16(max_scale / kQ4Scale);
    } else {
      b.d = fp32_to_fp16(0.f);
    }
    if (max_min > 0) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < 16; ++j) {
        b.scales[j] |=
            static_cast<uint8_t>(static_cast<uint32_t>(nearest_int(iscale * mins[j])) << 4);
      }
      b.dmin = fp32_to_fp16(max_min / kQ4Scale);
    } else {
      b.dmin = fp32_to_fp16(0.f);
    }
    const float d_all = fp16_to_fp32(b.d);
    const float dmin_all = fp16_to_fp32(b.dmin);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(b.scales[j] & 0xF);
      if (d == 0.0f) continue;
      const float dm = dmin_all * static_cast<float>(b.scales[j] >> 4);
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            static_cast<uint8_t>(clamp_level(nearest_int((x[16 * j + l] + dm) / d), 0, 3));
      }
    }
    pack_2bit(L, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_row_q3_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0;
    float amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
      const float a = std::fabs(scales[j]);
      if (a > amax) {
        amax = a;
        max_scale = scales[j];
      }
    }
    BlockQ3_K b;
    std::memset(&b, 0, sizeof(b));
    if (max_scale != 0.0f) {
      const float iscale = -32.f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // ggml narrows nearest_int to int8_t before clamping; in range this is the same value.
        const int l =
            clamp_level(static_cast<int8_t>(nearest_int(iscale * scales[j])), -32, 31) + 32;
        if (j < 8) {
          b.scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          b.scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
        }
        b.scales[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
      }
      b.d = fp32_to_fp16(1 / iscale);
    } else {
      b.d = fp32_to_fp16(0.f);
    }
    const float d_all = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(q3_k_scale(j, b.scales) - 32);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] = static_cast<int8_t>(clamp_level(nearest_int(x[16 * j + l] / d), -4, 3) + 4);
      }
    }
    // Third bit of element e: bit e / 32 of hmask[e % 32]; the low two bits go to qs.
    uint8_t low[kQK_K];
    for (int e = 0; e < kQK_K; ++e) {
      int l = L[e];
      if (l > 3) {
        b.hmask[e % 32] |= static_cast<uint8_t>(1u << (e / 32));
        l -= 4;
      }
      low[e] = static_cast<uint8_t>(l);
    }
    pack_2bit(low, b.qs);
    store_block(dst, i, b);
  }
}

void quantize_row_q4_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    BlockQ4_K b;
    quantize_k4_levels(x, 15, -1.f, 0.1f, 20, &b.d, &b.dmin, b.scales, L);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        b.qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + l + 32] << 4));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_row_q5_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    uint8_t L[kQK_K];
    BlockQ5_K b;
    quantize_k4_levels(x, 31, -0.5f, 0.1f, 15, &b.d, &b.dmin, b.scales, L);
    std::memset(b.qh, 0, sizeof(b.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        int l1 = L[64 * c + l];
        int l2 = L[64 * c + l + 32];
        if (l1 > 15) {
          l1 -= 16;
          b.qh[l] |= static_cast<uint8_t>(1u << (2 * c));
        }
        if (l2 > 15) {
          l2 -= 16;
          b.qh[l] |= static_cast<uint8_t>(1u << (2 * c + 1));
        }
        b.qs[32 * c + l] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
    }
    store_block(dst, i, b);
  }
}

void quantize_row_q6_k(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n / kQK_K; ++i) {
    const float* x = src + i * kQK_K;
    int8_t L[kQK_K];
    float scales[16];
    float max_scale = 0;
    float max_abs_scale = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = make_qx_quants(16, 32, x + 16 * j, L + 16 * j, nullptr);
      const float a = std::fabs(scales[j]);
      if (a > max_abs_scale) {
        max_abs_scale = a;
        max_scale = scales[j];
      }
    }
    BlockQ6_K b;
    std::memset(&b, 0, sizeof(b));
    if (max_abs_scale < kGroupMaxEps) {
      b.d = fp32_to_fp16(0.f);
      store_block(dst, i, b);
      continue;
    }
    const float iscale = -128.f / max_scale;
    b.d = fp32_to_fp16(1 / iscale);
    for (int j = 0; j < 16; ++j) {
      b.scales[j] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[j])));
    }
    const float d_all = fp16_to_fp32(b.d);
    for (int j = 0; j < 16; ++j) {
      const float d = d_all * static_cast<float>(b.scales[j]);
      if (d == 0.0f) continue;
      for (int l = 0; l < 16; ++l) {
        L[16 * j + l] =
            static_cast<int8_t>(clamp_level(nearest_int(x[16 * j + l] / d), -32, 31) + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        b.ql[64 * h + l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
        b.ql[64 * h + l + 32] =
            static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
        b.qh[32 * h + l] =
            static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) |
                                 ((Lh[l + 64] >> 4) << 4) | ((Lh[l + 96] >> 4) << 6));
      }
    }
    store_block(dst, i, b);
  }
}

}  // namespace pagoda::kernels::cpu::reference
