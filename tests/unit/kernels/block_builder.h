// Test-side encoders for ggml's quantised block formats, written from the format definition
// (ggml-common.h) independently of src/kernels: each builds a block's bytes from chosen field
// values (levels, sub-block scales/mins, f16 super-scales) and can say what every element must
// dequantise to. Expected values are computed in double from the definition.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tensor/float16.h"

namespace pagoda::kernels::testing {

inline void put_u16(std::vector<uint8_t>& b, size_t off, uint16_t v) {
  b[off] = static_cast<uint8_t>(v & 0xff);
  b[off + 1] = static_cast<uint8_t>(v >> 8);
}
inline double half(uint16_t h) {
  return tensor::fp16_to_fp32(h);
}

// A block under construction: `bytes` plus the value each element should decode to.
struct BuiltBlock {
  std::vector<uint8_t> bytes;
  std::vector<double> expected;
};

// Q4_0 (18 bytes): d @0, qs[16] @2. Element e: nibble (e < 16 ? low of qs[e] : high of
// qs[e-16]); value d * (q - 8).
inline BuiltBlock build_q4_0(uint16_t d, const std::array<int, 32>& q) {
  BuiltBlock b{std::vector<uint8_t>(18, 0), std::vector<double>(32)};
  put_u16(b.bytes, 0, d);
  for (int e = 0; e < 32; ++e) {
    b.bytes[2 + e % 16] |= static_cast<uint8_t>(q[e] << (e < 16 ? 0 : 4));
    b.expected[e] = half(d) * (q[e] - 8);
  }
  return b;
}

// Q4_1 (20 bytes): d @0, m @2, qs @4; value d * q + m.
inline BuiltBlock build_q4_1(uint16_t d, uint16_t m, const std::array<int, 32>& q) {
  BuiltBlock b{std::vector<uint8_t>(20, 0), std::vector<double>(32)};
  put_u16(b.bytes, 0, d);
  put_u16(b.bytes, 2, m);
  for (int e = 0; e < 32; ++e) {
    b.bytes[4 + e % 16] |= static_cast<uint8_t>(q[e] << (e < 16 ? 0 : 4));
    b.expected[e] = half(d) * q[e] + half(m);
  }
  return b;
}

// Q5_0 (22 bytes): d @0, qh (u32 LE) @2, qs @6; fifth bit of element e = bit e of qh;
// value d * (q - 16).
inline BuiltBlock build_q5_0(uint16_t d, const std::array<int, 32>& q) {
  BuiltBlock b{std::vector<uint8_t>(22, 0), std::vector<double>(32)};
  put_u16(b.bytes, 0, d);
  for (int e = 0; e < 32; ++e) {
    b.bytes[6 + e % 16] |= static_cast<uint8_t>((q[e] & 15) << (e < 16 ? 0 : 4));
    if (q[e] & 16) b.bytes[2 + e / 8] |= static_cast<uint8_t>(1 << (e % 8));
    b.expected[e] = half(d) * (q[e] - 16);
  }
  return b;
}

// Q5_1 (24 bytes): d @0, m @2, qh @4, qs @8; value d * q + m.
inline BuiltBlock build_q5_1(uint16_t d, uint16_t m, const std::array<int, 32>& q) {
  BuiltBlock b{std::vector<uint8_t>(24, 0), std::vector<double>(32)};
  put_u16(b.bytes, 0, d);
  put_u16(b.bytes, 2, m);
  for (int e = 0; e < 32; ++e) {
    b.bytes[8 + e % 16] |= static_cast<uint8_t>((q[e] & 15) << (e < 16 ? 0 : 4));
    if (q[e] & 16) b.bytes[4 + e / 8] |= static_cast<uint8_t>(1 << (e % 8));
    b.expected[e] = half(d) * q[e] + half(m);
  }
  return b;
}

// Q8_0 (34 bytes): d @0, int8 qs[32] @2; value d * q.
inline BuiltBlock build_q8_0(uint16_t d, const std::array<int, 32>& q) {
  BuiltBlock b{std::vector<uint8_t>(34, 0), std::vector<double>(32)};
  put_u16(b.bytes, 0, d);
  for (int e = 0; e < 32; ++e) {
    b.bytes[2 + e] = static_cast<uint8_t>(static_cast<int8_t>(q[e]));
    b.expected[e] = half(d) * q[e];
  }
  return b;
}

// 2-bit plane position shared by Q2_K and Q3_K: byte 32 * (e / 128) + e % 32 of qs, shift
// 2 * ((e % 128) / 32).
inline void put_2bit(uint8_t* qs, int e, int q) {
  qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((q & 3) << (2 * ((e % 128) / 32)));
}

// Q2_K (84 bytes): scales[16] @0 (low nibble scale, high nibble min of 16-element sub-block
// e / 16), qs[64] @16, d @80, dmin @82; value d * sc * q - dmin * m.
inline BuiltBlock build_q2_k(uint16_t d, uint16_t dmin, const std::array<int, 16>& sc,
                             const std::array<int, 16>& mn, const std::array<int, 256>& q) {
  BuiltBlock b{std::vector<uint8_t>(84, 0), std::vector<double>(256)};
  for (int s = 0; s < 16; ++s)
    b.bytes[s] = static_cast<uint8_t>(sc[s] | (mn[s] << 4));
  put_u16(b.bytes, 80, d);
  put_u16(b.bytes, 82, dmin);
  for (int e = 0; e < 256; ++e) {
    put_2bit(&b.bytes[16], e, q[e]);
    b.expected[e] = half(d) * sc[e / 16] * q[e] - half(dmin) * mn[e / 16];
  }
  return b;
}

// Q3_K (110 bytes): hmask[32] @0, qs[64] @32, scales[12] @96, d @108. Unsigned 6-bit scale s
// (0..15): low 4 bits in nibble s / 8 of scales[s % 8], high 2 bits at bit 2 * (s / 4) of
// scales[8 + s % 4]; signed scale = that - 32. Level q in [-4, 3]: low 2 bits of q + 4 in qs, and
// hmask[e % 32] bit e / 32 set iff q >= 0. value = d * (sc - 32) * q.
inline BuiltBlock build_q3_k(uint16_t d, const std::array<int, 16>& sc6,
                             const std::array<int, 256>& q) {
  BuiltBlock b{std::vector<uint8_t>(110, 0), std::vector<double>(256)};
  for (int s = 0; s < 16; ++s) {
    b.bytes[96 + s % 8] |= static_cast<uint8_t>((sc6[s] & 15) << (4 * (s / 8)));
    b.bytes[96 + 8 + s % 4] |= static_cast<uint8_t>((sc6[s] >> 4) << (2 * (s / 4)));
  }
  put_u16(b.bytes, 108, d);
  for (int e = 0; e < 256; ++e) {
    const int biased = q[e] + 4;
    put_2bit(&b.bytes[32], e, biased & 3);
    if (biased & 4) b.bytes[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    b.expected[e] = half(d) * (sc6[e / 16] - 32) * q[e];
  }
  return b;
}

// Q4_K/Q5_K 6-bit scale and min of sub-block j (0..7) into scales[12]: j < 4: scales[j] and
// scales[j + 4] low 6 bits; j >= 4: low nibbles in scales[j + 4] (scale low, min high), high
// 2 bits in the top 2 bits of scales[j - 4] (scale) and scales[j] (min).
inline void put_k4_scale_min(uint8_t* s, int j, int sc, int mn) {
  if (j < 4) {
    s[j] |= static_cast<uint8_t>(sc);
    s[j + 4] |= static_cast<uint8_t>(mn);
  } else {
    s[j + 4] |= static_cast<uint8_t>((sc & 15) | ((mn & 15) << 4));
    s[j - 4] |= static_cast<uint8_t>((sc >> 4) << 6);
    s[j] |= static_cast<uint8_t>((mn >> 4) << 6);
  }
}

// Q4_K (144 bytes): d @0, dmin @2, scales[12] @4, qs[128] @16. Element e: sub-block e / 32;
// nibble (low if (e / 32) even) of qs[32 * (e / 64) + e % 32]; value d * sc * q - dmin * m.
inline BuiltBlock build_q4_k(uint16_t d, uint16_t dmin, const std::array<int, 8>& sc,
                             const std::array<int, 8>& mn, const std::array<int, 256>& q) {
  BuiltBlock b{std::vector<uint8_t>(144, 0), std::vector<double>(256)};
  put_u16(b.bytes, 0, d);
  put_u16(b.bytes, 2, dmin);
  for (int j = 0; j < 8; ++j)
    put_k4_scale_min(&b.bytes[4], j, sc[j], mn[j]);
  for (int e = 0; e < 256; ++e) {
    b.bytes[16 + 32 * (e / 64) + e % 32] |= static_cast<uint8_t>(q[e] << (4 * ((e / 32) % 2)));
    b.expected[e] = half(d) * sc[e / 32] * q[e] - half(dmin) * mn[e / 32];
  }
  return b;
}

// Q5_K (176 bytes): d @0, dmin @2, scales[12] @4, qh[32] @16, qs[128] @48. Like Q4_K plus the
// fifth bit of element e at bit e / 32 of qh[e % 32].
inline BuiltBlock build_q5_k(uint16_t d, uint16_t dmin, const std::array<int, 8>& sc,
                             const std::array<int, 8>& mn, const std::array<int, 256>& q) {
  BuiltBlock b{std::vector<uint8_t>(176, 0), std::vector<double>(256)};
  put_u16(b.bytes, 0, d);
  put_u16(b.bytes, 2, dmin);
  for (int j = 0; j < 8; ++j)
    put_k4_scale_min(&b.bytes[4], j, sc[j], mn[j]);
  for (int e = 0; e < 256; ++e) {
    b.bytes[48 + 32 * (e / 64) + e % 32] |=
        static_cast<uint8_t>((q[e] & 15) << (4 * ((e / 32) % 2)));
    if (q[e] & 16) b.bytes[16 + e % 32] |= static_cast<uint8_t>(1 << (e / 32));
    b.expected[e] = half(d) * sc[e / 32] * q[e] - half(dmin) * mn[e / 32];
  }
  return b;
}

// Q6_K (210 bytes): ql[128] @0, qh[64] @128, int8 scales[16] @192, d @208. Element e: h = e / 128,
// k = (e % 128) / 32, l = e % 32; low 4 bits of q + 32 in ql[64 h + l + 32 (k % 2)] (low nibble
// for k < 2), high 2 bits at shift 2 k of qh[32 h + l]; value d * scales[e / 16] * q, q in
// [-32, 31].
inline BuiltBlock build_q6_k(uint16_t d, const std::array<int, 16>& sc,
                             const std::array<int, 256>& q) {
  BuiltBlock b{std::vector<uint8_t>(210, 0), std::vector<double>(256)};
  for (int s = 0; s < 16; ++s)
    b.bytes[192 + s] = static_cast<uint8_t>(static_cast<int8_t>(sc[s]));
  put_u16(b.bytes, 208, d);
  for (int e = 0; e < 256; ++e) {
    const int u = q[e] + 32;
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    b.bytes[64 * h + l + 32 * (k % 2)] |= static_cast<uint8_t>((u & 15) << (k < 2 ? 0 : 4));
    b.bytes[128 + 32 * h + l] |= static_cast<uint8_t>((u >> 4) << (2 * k));
    b.expected[e] = half(d) * sc[e / 16] * q[e];
  }
  return b;
}

}  // namespace pagoda::kernels::testing
