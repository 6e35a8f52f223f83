// Byte layouts of ggml's quantised blocks (ggml-common.h), shared by the scalar reference and
// every SIMD path. Half-precision fields are raw IEEE binary16 bits (tensor/float16.h).
// Blocks in a file may sit at any even address; kernels copy a block into one of these structs
// (or read bytes) rather than casting unaligned pointers.
//
// Element order inside a block (n = index in [0, block size)):
//   Q4_0/Q4_1/Q5_x: n < 16 is the low nibble of qs[n], n >= 16 the high nibble of qs[n - 16];
//                   Q5's fifth bit is bit n of the little-endian 32-bit qh.
//   Q8_0:           qs[n].
//   Q2_K/Q3_K:      half h = n / 128, r = n % 128: 2 bits at shift 2 * (r / 32) of
//                   qs[32 h + r % 32]; sub-block scale index n / 16.
//                   Q3_K's third bit: bit n / 32 of hmask[n % 32], set means +0, clear means -4.
//   Q4_K/Q5_K:      chunk c = n / 64, r = n % 64: low nibble of qs[32 c + r] for r < 32, high
//                   nibble of qs[32 c + r - 32] otherwise; sub-block (scale/min) index n / 32.
//                   Q5_K's fifth bit: bit n / 32 of qh[n % 32].
//   Q6_K:           half h = n / 128, r = n % 128, quarter k = r / 32, l = r % 32: low 4 bits
//                   from ql[64 h + l + 32 (k & 1)] (low nibble for k < 2, high otherwise), high
//                   2 bits at shift 2 k of qh[32 h + l]; scale index n / 16.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pagoda::kernels::cpu {

inline constexpr int kQK = 32;     // elements per legacy block
inline constexpr int kQK_K = 256;  // elements per K-quant super-block

struct BlockQ4_0 {
  uint16_t d;           // scale (f16): x = d * (q - 8)
  uint8_t qs[kQK / 2];  // 4-bit quants
};
struct BlockQ4_1 {
  uint16_t d;  // scale (f16)
  uint16_t m;  // min (f16): x = d * q + m
  uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
  uint16_t d;     // x = d * (q - 16)
  uint8_t qh[4];  // fifth bits, little-endian uint32
  uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;  // x = d * q + m
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
  uint16_t d;  // x = d * q
  int8_t qs[kQK];
};
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];  // low nibble: scale, high nibble: min, per 16 elements
  uint8_t qs[kQK_K / 4];       // 2-bit quants
  uint16_t d;                  // super-block scale of the scales (f16)
  uint16_t dmin;               // super-block scale of the mins (f16)
};
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];  // third bit
  uint8_t qs[kQK_K / 4];     // low 2 bits
  uint8_t scales[12];        // 16 6-bit scales (see q3_k_scale)
  uint16_t d;                // super-block scale (f16)
};
struct BlockQ4_K {
  uint16_t d;             // super-block scale of the scales (f16)
  uint16_t dmin;          // super-block scale of the mins (f16)
  uint8_t scales[12];     // 8 6-bit scales and 8 6-bit mins (see k4_scale_min)
  uint8_t qs[kQK_K / 2];  // 4-bit quants
};
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQK_K / 8];  // fifth bits
  uint8_t qs[kQK_K / 2];  // low 4 bits
};
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];      // low 4 bits
  uint8_t qh[kQK_K / 4];      // high 2 bits
  int8_t scales[kQK_K / 16];  // 8-bit signed sub-block scales
  uint16_t d;                 // super-block scale (f16)
};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84 && offsetof(BlockQ2_K, d) == 80);
static_assert(sizeof(BlockQ3_K) == 110 && offsetof(BlockQ3_K, d) == 108);
static_assert(sizeof(BlockQ4_K) == 144 && offsetof(BlockQ4_K, qs) == 16);
static_assert(sizeof(BlockQ5_K) == 176 && offsetof(BlockQ5_K, qs) == 48);
static_assert(sizeof(BlockQ6_K) == 210 && offsetof(BlockQ6_K, d) == 208);

// Q4_K/Q5_K: the 6-bit scale and min of sub-block j (0..7) packed in `scales[12]`:
// j < 4: scale = s[j] & 63, min = s[j + 4] & 63;
// j >= 4: low 4 bits in the nibbles of s[j + 4], high 2 bits in the top bits of s[j - 4] (scale)
// and s[j] (min).
inline void k4_scale_min(int j, const uint8_t* s, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// Q3_K: the unsigned 6-bit scale of sub-block j (0..15); the signed scale is this minus 32.
// Low 4 bits: nibble (j / 8) of s[j % 8]; high 2 bits: bits 2 * (j / 4) of s[8 + j % 4].
inline int q3_k_scale(int j, const uint8_t* s) {
  const int low = j < 8 ? (s[j] & 0xF) : (s[j - 8] >> 4);
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return low | (high << 4);
}

}  // namespace pagoda::kernels::cpu
