#include "convert/quantize/weighted_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/quant.h"
#include "tensor/float16.h"

namespace pagoda::convert {
namespace {

int nearest(float v) {
  return static_cast<int>(std::lround(v));
}

float f16_round(float v) {
  return tensor::fp16_to_fp32(tensor::fp32_to_fp16(v));
}

void store_f16(uint8_t* p, float v) {
  const uint16_t h = tensor::fp32_to_fp16(v);
  std::memcpy(p, &h, 2);
}

}  // namespace

// Symmetric levels L in [-nmax, nmax - 1], x ≈ d·L. Returns d; writes L.
float fit_symmetric(const float* x, const float* w, int n, int nmax, int* L) {
  float amax = 0, max = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  if (amax < 1e-30f) {
    std::fill(L, L + n, 0);
    return 0;
  }
  float best_d = 0, best_err = INFINITY;
  int tmp[256];
  for (int is = -9; is <= 9; ++is) {
    const float d0 = max / (-static_cast<float>(nmax) - 0.1f * static_cast<float>(is));
    double sxl = 0, sll = 0;
    for (int i = 0; i < n; ++i) {
      tmp[i] = std::clamp(nearest(x[i] / d0), -nmax, nmax - 1);
      sxl += static_cast<double>(w[i]) * x[i] * tmp[i];
      sll += static_cast<double>(w[i]) * tmp[i] * tmp[i];
    }
    if (sll <= 0) continue;
    const float d = static_cast<float>(sxl / sll);
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double e = x[i] - d * static_cast<float>(tmp[i]);
      err += w[i] * e * e;
    }
    if (err < best_err) {
      best_err = static_cast<float>(err);
      best_d = d;
      std::copy(tmp, tmp + n, L);
    }
  }
  return best_d;
}

namespace {

// Asymmetric levels L in [0, nmax], x ≈ a·L - m with m >= 0. Writes a, m.
void fit_affine(const float* x, const float* w, int n, int nmax, float& a_out, float& m_out) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  lo = std::min(lo, 0.0f);
  if (hi <= lo) {
    a_out = 0;
    m_out = -lo;
    return;
  }
  double best_err = INFINITY;
  a_out = (hi - lo) / static_cast<float>(nmax);
  m_out = -lo;
  for (int is = -10; is <= 10; ++is) {
    const float iscale = (static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / (hi - lo);
    double s1 = 0, sl = 0, sll = 0, sx = 0, sxl = 0;
    int L[32];
    for (int i = 0; i < n; ++i) {
      L[i] = std::clamp(nearest(iscale * (x[i] - lo)), 0, nmax);
      s1 += w[i];
      sl += static_cast<double>(w[i]) * L[i];
      sll += static_cast<double>(w[i]) * L[i] * L[i];
      sx += static_cast<double>(w[i]) * x[i];
      sxl += static_cast<double>(w[i]) * x[i] * L[i];
    }
    const double det = s1 * sll - sl * sl;
    if (det <= 0) continue;
    double a = (s1 * sxl - sl * sx) / det;
    double b = (sll * sx - sl * sxl) / det;  // x ≈ a·L + b
    if (b > 0) {                             // the format needs m = -b >= 0
      b = 0;
      a = sxl / sll;
    }
    if (a <= 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double e = x[i] - (a * L[i] + b);
      err += w[i] * e * e;
    }
    if (err < best_err) {
      best_err = err;
      a_out = static_cast<float>(a);
      m_out = static_cast<float>(-b);
    }
  }
}

// block_q4_0: f16 d, then 16 bytes: element j in the low nibble of byte j, j + 16 in the high.
void q4_0_block(const float* x, const float* w, uint8_t* out) {
  int L[32];
  const float d = f16_round(fit_symmetric(x, w, 32, 8, L));
  store_f16(out, d);
  for (int j = 0; j < 16; ++j)
    out[2 + j] = static_cast<uint8_t>((L[j] + 8) | ((L[j + 16] + 8) << 4));
}

// block_q4_K / block_q5_K: f16 d, f16 dmin, 12 bytes of 6-bit (scale, min) per 32-element
// sub-block; Q5_K then qh[32] (fifth bit of element n: bit n / 32 of qh[n % 32]); then 128 bytes:
// chunks of 64 elements, the first 32 in low nibbles, the next 32 in high nibbles.
template <int kNmax>
void k4_block(const float* x, const float* w, uint8_t* out) {
  float scale[8], min[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    fit_affine(x + 32 * j, w + 32 * j, 32, kNmax, scale[j], min[j]);
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(std::clamp(nearest(inv_scale * scale[j]), 0, 63));
    lm[j] = static_cast<uint8_t>(std::clamp(nearest(inv_min * min[j]), 0, 63));
  }
  const float d = f16_round(max_scale / 63.0f);
  const float dmin = f16_round(max_min / 63.0f);
  store_f16(out, d);
  store_f16(out + 2, dmin);
  uint8_t* sc = out + 4;
  std::memset(sc, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      sc[j] = ls[j];
      sc[j + 4] = lm[j];
    } else {
      sc[j + 4] = static_cast<uint8_t>((ls[j] & 0xF) | ((lm[j] & 0xF) << 4));
      sc[j - 4] |= static_cast<uint8_t>((ls[j] >> 4) << 6);
      sc[j] |= static_cast<uint8_t>((lm[j] >> 4) << 6);
    }
  }
  uint8_t L[256];
  for (int j = 0; j < 8; ++j) {
    const float dj = d * ls[j];
    const float mj = dmin * lm[j];
    for (int i = 0; i < 32; ++i) {
      const int l = dj > 0 ? nearest((x[32 * j + i] + mj) / dj) : 0;
      L[32 * j + i] = static_cast<uint8_t>(std::clamp(l, 0, kNmax));
    }
  }
  uint8_t* qh = out + 16;
  uint8_t* qs = out + (kNmax > 15 ? 48 : 16);
  if (kNmax > 15) std::memset(qh, 0, 32);
  for (int c = 0; c < 256; c += 64) {
    for (int l = 0; l < 32; ++l) {
      const int lo = L[c + l], hi = L[c + l + 32];
      qs[c / 2 + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
      if (kNmax > 15) {
        qh[l] |=
            static_cast<uint8_t>((((lo >> 4) & 1) << (c / 32)) | (((hi >> 4) & 1) << (c / 32 + 1)));
      }
    }
  }
}

// Q2_K/Q3_K: four 2-bit planes, element n of each 128-half at shift 2·((n % 128) / 32).
void pack_2bit(const int* L, uint8_t* qs) {
  for (int h = 0; h < 256; h += 128) {
    for (int l = 0; l < 32; ++l) {
      qs[h / 4 + l] = static_cast<uint8_t>((L[h + l] & 3) | ((L[h + l + 32] & 3) << 2) |
                                           ((L[h + l + 64] & 3) << 4) | ((L[h + l + 96] & 3) << 6));
    }
  }
}

// block_q2_K: scales[16] (low nibble: scale, high nibble: min, per 16 elements), qs[64] 2-bit
// levels, f16 d, f16 dmin: x = d·sc·q - dmin·m.
void q2_k_block(const float* x, const float* w, uint8_t* out) {
  float scale[16], min[16];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 16; ++j) {
    fit_affine(x + 16 * j, w + 16 * j, 16, 3, scale[j], min[j]);
    max_scale = std::max(max_scale, scale[j]);
    max_min = std::max(max_min, min[j]);
  }
  const float inv_scale = max_scale > 0 ? 15.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? 15.0f / max_min : 0.0f;
  const float d = f16_round(max_scale / 15.0f);
  const float dmin = f16_round(max_min / 15.0f);
  int L[256];
  for (int j = 0; j < 16; ++j) {
    const int ls = std::clamp(nearest(inv_scale * scale[j]), 0, 15);
    const int lm = std::clamp(nearest(inv_min * min[j]), 0, 15);
    out[j] = static_cast<uint8_t>(ls | (lm << 4));
    const float dj = d * static_cast<float>(ls), mj = dmin * static_cast<float>(lm);
    for (int i = 0; i < 16; ++i)
      L[16 * j + i] = dj > 0 ? std::clamp(nearest((x[16 * j + i] + mj) / dj), 0, 3) : 0;
  }
  pack_2bit(L, out + 16);
  store_f16(out + 80, d);
  store_f16(out + 82, dmin);
}

// block_q3_K: hmask[32] (third bit of element n: bit n / 32 of hmask[n % 32], set: level >= 4),
// qs[64] low 2 bits, 12 bytes of 16 6-bit signed scales (+32), f16 d: x = d·(sc - 32)·(q - 4).
void q3_k_block(const float* x, const float* w, uint8_t* out) {
  float scale[16];
  int L[256];
  float max_abs = 0, max_scale = 0;
  for (int j = 0; j < 16; ++j) {
    scale[j] = fit_symmetric(x + 16 * j, w + 16 * j, 16, 4, L + 16 * j);
    if (std::fabs(scale[j]) > max_abs) {
      max_abs = std::fabs(scale[j]);
      max_scale = scale[j];
    }
  }
  std::memset(out, 0, 110);
  if (max_abs == 0) return;
  const float iscale = -32.0f / max_scale;
  const float d = f16_round(1.0f / iscale);
  store_f16(out + 108, d);
  uint8_t* sc = out + 96;
  for (int j = 0; j < 16; ++j) {
    const int l = std::clamp(nearest(iscale * scale[j]), -32, 31) + 32;
    if (j < 8) {
      sc[j] = static_cast<uint8_t>(l & 0xF);
    } else {
      sc[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
    }
    sc[j % 4 + 8] |= static_cast<uint8_t>((l >> 4) << (2 * (j / 4)));
    const float dj = d * static_cast<float>(l - 32);
    for (int i = 0; i < 16; ++i) {
      const int e = 16 * j + i;
      L[e] = (dj != 0 ? std::clamp(nearest(x[e] / dj), -4, 3) : 0) + 4;
      if (L[e] > 3) out[e % 32] |= static_cast<uint8_t>(1u << (e / 32));
    }
  }
  pack_2bit(L, out + 32);
}

// block_q6_K: ql[128] (low 4 bits), qh[64] (high 2 bits), int8 scales[16] per 16 elements, f16 d.
void q6_k_block(const float* x, const float* w, uint8_t* out) {
  float scale[16];
  int L[256];
  float max_abs = 0, max_scale = 0;
  for (int j = 0; j < 16; ++j) {
    scale[j] = fit_symmetric(x + 16 * j, w + 16 * j, 16, 32, L + 16 * j);
    if (std::fabs(scale[j]) > max_abs) {
      max_abs = std::fabs(scale[j]);
      max_scale = scale[j];
    }
  }
  uint8_t* ql = out;
  uint8_t* qh = out + 128;
  auto* sc = reinterpret_cast<int8_t*>(out + 192);
  if (max_abs == 0) {
    std::memset(out, 0, 210);
    return;
  }
  const float iscale = -128.0f / max_scale;
  const float d = f16_round(1.0f / iscale);
  store_f16(out + 208, d);
  for (int j = 0; j < 16; ++j) {
    sc[j] = static_cast<int8_t>(std::clamp(nearest(iscale * scale[j]), -128, 127));
    const float dj = d * sc[j];
    for (int i = 0; i < 16; ++i) {
      const int l = dj != 0 ? nearest(x[16 * j + i] / dj) : 0;
      L[16 * j + i] = std::clamp(l, -32, 31) + 32;
    }
  }
  for (int c = 0; c < 256; c += 128) {
    for (int l = 0; l < 32; ++l) {
      const int q1 = L[c + l], q2 = L[c + l + 32], q3 = L[c + l + 64], q4 = L[c + l + 96];
      ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
      ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
      qh[l] =
          static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
    }
    ql += 64;
    qh += 32;
  }
}

// Σ w (x - decode(block))² of one encoded block of n values.
double block_error(tensor::DType type, const uint8_t* block, const float* x, const float* w,
                   int n) {
  float y[256];
  kernels::dequantize_row(type, block, y, n);
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const double e = static_cast<double>(x[i]) - y[i];
    err += w[i] * e * e;
  }
  return err;
}

// Encodes one block with `fit`, then keeps the reference (round-to-nearest) encoding instead
// when its weighted error is lower: the search never does worse than RTN under the weights.
template <class Fit>
void best_block(tensor::DType type, int n, size_t bytes, const float* x, const float* w,
                uint8_t* out, Fit fit) {
  fit(x, w, out);
  uint8_t ref[256];
  kernels::quantize_row(type, x, ref, n);
  if (block_error(type, ref, x, w, n) < block_error(type, out, x, w, n))
    std::memcpy(out, ref, bytes);
}

}  // namespace

bool supports_weighted(tensor::DType type) {
  switch (type) {
    case tensor::DType::kQ4_0:
    case tensor::DType::kQ2_K:
    case tensor::DType::kQ3_K:
    case tensor::DType::kQ4_K:
    case tensor::DType::kQ5_K:
    case tensor::DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

void element_weights(const float* x, const float* importance, int64_t n, float* w) {
  double sum_sq = 0;
  for (int64_t i = 0; i < n; ++i)
    sum_sq += static_cast<double>(x[i]) * x[i];
  const double sigma2 = n > 0 ? sum_sq / static_cast<double>(n) : 0.0;
  double max_imp = 0;
  for (int64_t i = 0; i < n; ++i)
    max_imp = std::max(max_imp, static_cast<double>(importance[i]));
  const double floor = max_imp > 0 ? max_imp * 1e-6 : 1.0;  // a dead column still counts a bit
  for (int64_t i = 0; i < n; ++i) {
    const double imp = std::max(static_cast<double>(importance[i]), floor);
    w[i] = static_cast<float>(imp * std::sqrt(sigma2 + static_cast<double>(x[i]) * x[i]) + 1e-30);
  }
}

void quantize_row_weighted(tensor::DType type, const float* x, const float* w, void* dst,
                           int64_t n) {
  auto* out = static_cast<uint8_t*>(dst);
  switch (type) {
    case tensor::DType::kQ4_0:
      PAGODA_CHECK(n % 32 == 0);
      for (int64_t b = 0; b < n / 32; ++b)
        best_block(type, 32, 18, x + 32 * b, w + 32 * b, out + 18 * b, q4_0_block);
      return;
    case tensor::DType::kQ2_K:
      PAGODA_CHECK(n % 256 == 0);
      for (int64_t b = 0; b < n / 256; ++b)
        best_block(type, 256, 84, x + 256 * b, w + 256 * b, out + 84 * b, q2_k_block);
      return;
    case tensor::DType::kQ3_K:
      PAGODA_CHECK(n % 256 == 0);
      for (int64_t b = 0; b < n / 256; ++b)
        best_block(type, 256, 110, x + 256 * b, w + 256 * b, out + 110 * b, q3_k_block);
      return;
    case tensor::DType::kQ4_K:
      PAGODA_CHECK(n % 256 == 0);
      for (int64_t b = 0; b < n / 256; ++b)
        best_block(type, 256, 144, x + 256 * b, w + 256 * b, out + 144 * b, k4_block<15>);
      return;
    case tensor::DType::kQ5_K:
      PAGODA_CHECK(n % 256 == 0);
      for (int64_t b = 0; b < n / 256; ++b)
        best_block(type, 256, 176, x + 256 * b, w + 256 * b, out + 176 * b, k4_block<31>);
      return;
    case tensor::DType::kQ6_K:
      PAGODA_CHECK(n % 256 == 0);
      for (int64_t b = 0; b < n / 256; ++b)
        best_block(type, 256, 210, x + 256 * b, w + 256 * b, out + 210 * b, q6_k_block);
      return;
    default:
      PAGODA_CHECK(false && "quantize_row_weighted: unsupported type");
  }
}

}  // namespace pagoda::convert
