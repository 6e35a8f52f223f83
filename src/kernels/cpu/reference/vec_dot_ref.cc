// Reference vec-dot products: one weight row (GGUF bytes) times one converted activation row
// (act_layout.h), with ggml's semantics: integer sums inside each block, scaled by the product of
// the two blocks' scales. The float operations are fixed here, in this order, and every SIMD path
// reproduces them bit for bit:
//   legacy blocks b = 0, 1, ...:  acc = fma(float(isum_b), dw_b * dx_b, acc)
//                                 Q4_1/Q5_1 then: acc = fma(mw_b, sx_b, acc)
//   K-quants, super-block b:      acc = fma(float(isum_b), dw_b * dx_b, acc)
//                                 Q2_K/Q4_K/Q5_K then: acc = fma(float(-msum_b), dminw_b * dx_b,
//                                 acc)
//   float types: eight lanes, lane j accumulates k ≡ j (mod 8) for k < n - n % 8 with fma; then
//     ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)); then the tail k in order with fma.
// isum_b is the exact integer Σ scale_j · Σ q·x over the (sub-)blocks, msum_b = Σ min_j · bsum_j.
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/block_layouts.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/reference/quant_helpers.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {
namespace {

using tensor::DType;
using tensor::fp16_to_fp32;

float weight_value(DType t, const uint8_t* w, int64_t k) {
  if (t == DType::kF32) {
    float v;
    std::memcpy(&v, w + 4 * k, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, w + 2 * k, 2);
  return t == DType::kF16 ? fp16_to_fp32(h) : tensor::bf16_to_fp32(h);
}

float dot_float(DType t, const uint8_t* w, const float* x, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t main = n - n % 8;
  for (int64_t k = 0; k < main; ++k)
    lane[k % 8] = std::fma(x[k], weight_value(t, w, k), lane[k % 8]);
  float s =
      ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
  for (int64_t k = main; k < n; ++k)
    s = std::fma(x[k], weight_value(t, w, k), s);
  return s;
}

// Legacy 32-element blocks: q[32] (with the type's offset applied), scale, and min (Q4_1/Q5_1).
struct Legacy {
  int q[32];
  float d;
  float m;
};

Legacy decode_legacy(DType t, const uint8_t* w, int64_t b) {
  Legacy out{};
  switch (t) {
    case DType::kQ4_0: {
      const auto blk = load_block<BlockQ4_0>(w, b);
      out.d = fp16_to_fp32(blk.d);
      for (int j = 0; j < 16; ++j) {
        out.q[j] = (blk.qs[j] & 0xF) - 8;
        out.q[j + 16] = (blk.qs[j] >> 4) - 8;
      }
      break;
    }
    case DType::kQ4_1: {
      const auto blk = load_block<BlockQ4_1>(w, b);
      out.d = fp16_to_fp32(blk.d);
      out.m = fp16_to_fp32(blk.m);
      for (int j = 0; j < 16; ++j) {
        out.q[j] = blk.qs[j] & 0xF;
        out.q[j + 16] = blk.qs[j] >> 4;
      }
      break;
    }
    case DType::kQ5_0:
    case DType::kQ5_1: {
      const bool q50 = t == DType::kQ5_0;
      uint16_t d, m = 0;
      uint32_t qh;
      const uint8_t* qs;
      BlockQ5_0 b0;
      BlockQ5_1 b1;
      if (q50) {
        b0 = load_block<BlockQ5_0>(w, b);
        d = b0.d;
        std::memcpy(&qh, b0.qh, 4);
        qs = b0.qs;
      } else {
        b1 = load_block<BlockQ5_1>(w, b);
        d = b1.d;
        m = b1.m;
        std::memcpy(&qh, b1.qh, 4);
        qs = b1.qs;
      }
      out.d = fp16_to_fp32(d);
      out.m = fp16_to_fp32(m);
      const int offset = q50 ? 16 : 0;
      for (int j = 0; j < 16; ++j) {
        out.q[j] = ((qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4)) - offset;
        out.q[j + 16] = ((qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4)) - offset;
      }
      break;
    }
    case DType::kQ8_0: {
      const auto blk = load_block<BlockQ8_0>(w, b);
      out.d = fp16_to_fp32(blk.d);
      for (int j = 0; j < 32; ++j)
        out.q[j] = blk.qs[j];
      break;
    }
    default:
      PAGODA_CHECK(false);
  }
  return out;
}

float dot_legacy(DType t, const uint8_t* w, const ActRow& x, int64_t n) {
  const bool with_min = t == DType::kQ4_1 || t == DType::kQ5_1;
  float acc = 0;
  for (int64_t b = 0; b < n / 32; ++b) {
    const Legacy blk = decode_legacy(t, w, b);
    int isum = 0;
    for (int j = 0; j < 32; ++j)
      isum += blk.q[j] * x.qs[b * 32 + j];
    acc = std::fma(static_cast<float>(isum), blk.d * x.d[b], acc);
    if (with_min) acc = std::fma(blk.m, x.s[b], acc);
  }
  return acc;
}

// K-quant super-block: signed levels q[256] (offsets applied), one scale per sub-block (16 or 32
// elements), mins per sub-block (Q2_K/Q4_K/Q5_K, else 0) and the two super-scales.
struct Super {
  int q[256];
  int scale[16];
  int min[16];
  int sub;  // elements per sub-block
  float d;
  float dmin;
};

Super decode_super(DType t, const uint8_t* w, int64_t b) {
  Super s{};
  switch (t) {
    case DType::kQ2_K: {
      const auto blk = load_block<BlockQ2_K>(w, b);
      s.sub = 16;
      s.d = fp16_to_fp32(blk.d);
      s.dmin = fp16_to_fp32(blk.dmin);
      for (int n = 0; n < 256; ++n) {
        const int h = n / 128, r = n % 128;
        s.q[n] = (blk.qs[32 * h + r % 32] >> (2 * (r / 32))) & 3;
      }
      for (int j = 0; j < 16; ++j) {
        s.scale[j] = blk.scales[j] & 0xF;
        s.min[j] = blk.scales[j] >> 4;
      }
      break;
    }
    case DType::kQ3_K: {
      const auto blk = load_block<BlockQ3_K>(w, b);
      s.sub = 16;
      s.d = fp16_to_fp32(blk.d);
      for (int n = 0; n < 256; ++n) {
        const int h = n / 128, r = n % 128;
        const int low = (blk.qs[32 * h + r % 32] >> (2 * (r / 32))) & 3;
        const bool high = (blk.hmask[n % 32] >> (n / 32)) & 1;
        s.q[n] = low - (high ? 0 : 4);
      }
      for (int j = 0; j < 16; ++j)
        s.scale[j] = q3_k_scale(j, blk.scales) - 32;
      break;
    }
    case DType::kQ4_K:
    case DType::kQ5_K: {
      const bool q5 = t == DType::kQ5_K;
      BlockQ4_K b4;
      BlockQ5_K b5;
      const uint8_t *scales, *qs, *qh = nullptr;
      if (q5) {
        b5 = load_block<BlockQ5_K>(w, b);
        s.d = fp16_to_fp32(b5.d);
        s.dmin = fp16_to_fp32(b5.dmin);
        scales = b5.scales;
        qs = b5.qs;
        qh = b5.qh;
      } else {
        b4 = load_block<BlockQ4_K>(w, b);
        s.d = fp16_to_fp32(b4.d);
        s.dmin = fp16_to_fp32(b4.dmin);
        scales = b4.scales;
        qs = b4.qs;
      }
      s.sub = 32;
      for (int n = 0; n < 256; ++n) {
        const int c = n / 64, r = n % 64;
        const uint8_t byte = qs[32 * c + r % 32];
        int v = r < 32 ? (byte & 0xF) : (byte >> 4);
        if (q5) v |= ((qh[n % 32] >> (n / 32)) & 1) << 4;
        s.q[n] = v;
      }
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, mn;
        k4_scale_min(j, scales, &sc, &mn);
        s.scale[j] = sc;
        s.min[j] = mn;
      }
      break;
    }
    case DType::kQ6_K: {
      const auto blk = load_block<BlockQ6_K>(w, b);
      s.sub = 16;
      s.d = fp16_to_fp32(blk.d);
      for (int n = 0; n < 256; ++n) {
        const int h = n / 128, r = n % 128, k = r / 32, l = r % 32;
        const uint8_t lb = blk.ql[64 * h + l + 32 * (k & 1)];
        const int low = k < 2 ? (lb & 0xF) : (lb >> 4);
        const int high = (blk.qh[32 * h + l] >> (2 * k)) & 3;
        s.q[n] = (low | (high << 4)) - 32;
      }
      for (int j = 0; j < 16; ++j)
        s.scale[j] = blk.scales[j];
      break;
    }
    default:
      PAGODA_CHECK(false);
  }
  return s;
}

float dot_k(DType t, const uint8_t* w, const ActRow& x, int64_t n) {
  const bool with_min = t == DType::kQ2_K || t == DType::kQ4_K || t == DType::kQ5_K;
  float acc = 0;
  for (int64_t b = 0; b < n / 256; ++b) {
    const Super s = decode_super(t, w, b);
    const int8_t* xq = x.qs + b * 256;
    const int16_t* bsums = x.sums + b * 16;
    int isum = 0, msum = 0;
    for (int j = 0; j < 256 / s.sub; ++j) {
      int sub_sum = 0;
      for (int k = j * s.sub; k < (j + 1) * s.sub; ++k)
        sub_sum += s.q[k] * xq[k];
      isum += s.scale[j] * sub_sum;
      int bsum = 0;
      for (int k = j * s.sub / 16; k < (j + 1) * s.sub / 16; ++k)
        bsum += bsums[k];
      msum += s.min[j] * bsum;
    }
    acc = std::fma(static_cast<float>(isum), s.d * x.d[b], acc);
    if (with_min) acc = std::fma(static_cast<float>(-msum), s.dmin * x.d[b], acc);
  }
  return acc;
}

}  // namespace

float vec_dot(DType t, const uint8_t* w, const ActRow& x, int64_t n) {
  switch (t) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return dot_float(t, w, x.vals, n);
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ8_0:
      return dot_legacy(t, w, x, n);
    default:
      return dot_k(t, w, x, n);
  }
}

}  // namespace pagoda::kernels::cpu::reference
