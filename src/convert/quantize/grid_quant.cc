#include "convert/quantize/grid_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/block_layouts.h"
#include "tensor/float16.h"

namespace pagoda::convert {
namespace {

using tensor::DType;

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return tensor::fp16_to_fp32(h);
}

// Bytes per block and elements per block of the supported types.
struct Layout {
  int64_t block;
  size_t bytes;
};

Layout layout_of(DType type) {
  switch (type) {
    case DType::kQ4_0:
      return {32, 18};
    case DType::kQ5_0:
      return {32, 22};
    case DType::kQ8_0:
      return {32, 34};
    case DType::kQ2_K:
      return {256, 84};
    case DType::kQ3_K:
      return {256, 110};
    case DType::kQ4_K:
      return {256, 144};
    case DType::kQ5_K:
      return {256, 176};
    case DType::kQ6_K:
      return {256, 210};
    default:
      PAGODA_CHECK(false && "grid_quant: unsupported type");
      return {1, 0};
  }
}

// Elements per scale (and min) of the supported types.
int32_t group_of(DType type) {
  switch (type) {
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ6_K:
      return 16;
    default:
      return 32;
  }
}

// Q2_K/Q3_K: the 2-bit plane of element n (0..255) sits at shift 2·((n % 128) / 32) of byte
// 32·(n / 128) + n % 32 of qs.
void put_2bit(uint8_t* qs, int n, int v) {
  const int byte = 32 * (n / 128) + n % 32;
  const int shift = 2 * ((n % 128) / 32);
  qs[byte] = static_cast<uint8_t>((qs[byte] & ~(3 << shift)) | ((v & 3) << shift));
}

}  // namespace

int32_t RowGrid::level(int64_t g, double v) const {
  const double s = scale[g];
  if (s == 0) return std::clamp(0, qmin, qmax);
  const double l = std::nearbyint((v - offset[g]) / s);
  return static_cast<int32_t>(std::clamp(l, static_cast<double>(qmin), static_cast<double>(qmax)));
}

bool grid_supported(DType type) {
  switch (type) {
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
      return true;
    default:
      return false;
  }
}

void grid_of_row(DType type, const uint8_t* row, int64_t n, RowGrid& grid) {
  const Layout lay = layout_of(type);
  PAGODA_CHECK(n % lay.block == 0);
  const int64_t num_blocks = n / lay.block;
  grid.group = group_of(type);
  const int64_t groups_per_block = lay.block / grid.group;
  grid.scale.assign(static_cast<size_t>(n / grid.group), 0.0f);
  grid.offset.assign(grid.scale.size(), 0.0f);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint8_t* p = row + static_cast<size_t>(b) * lay.bytes;
    float* s = grid.scale.data() + b * groups_per_block;
    float* o = grid.offset.data() + b * groups_per_block;
    switch (type) {
      case DType::kQ4_0:  // x = d·(q - 8)
        s[0] = f16_at(p);
        o[0] = -8.0f * s[0];
        break;
      case DType::kQ5_0:  // x = d·(q - 16)
        s[0] = f16_at(p);
        o[0] = -16.0f * s[0];
        break;
      case DType::kQ8_0:  // x = d·q
        s[0] = f16_at(p);
        o[0] = 0.0f;
        break;
      case DType::kQ2_K: {  // x = (d·sc)·q - dmin·m per sub-block of 16, 4-bit sc and m
        const float d = f16_at(p + 80), dmin = f16_at(p + 82);
        for (int j = 0; j < 16; ++j) {
          s[j] = d * static_cast<float>(p[j] & 0xF);
          o[j] = -(dmin * static_cast<float>(p[j] >> 4));
        }
        break;
      }
      case DType::kQ3_K: {  // x = (d·(sc - 32))·(q - 4) per sub-block of 16, 6-bit sc
        const float d = f16_at(p + 108);
        for (int j = 0; j < 16; ++j) {
          s[j] = d * static_cast<float>(kernels::cpu::q3_k_scale(j, p + 96) - 32);
          o[j] = -4.0f * s[j];
        }
        break;
      }
      case DType::kQ4_K:
      case DType::kQ5_K: {  // x = (d·sc)·q - dmin·m per sub-block of 32
        const float d = f16_at(p), dmin = f16_at(p + 2);
        for (int j = 0; j < 8; ++j) {
          uint8_t sc, m;
          kernels::cpu::k4_scale_min(j, p + 4, &sc, &m);
          s[j] = d * sc;
          o[j] = -(dmin * m);
        }
        break;
      }
      case DType::kQ6_K: {  // x = (d·sc)·(q - 32) per sub-block of 16
        const float d = f16_at(p + 208);
        for (int j = 0; j < 16; ++j) {
          s[j] = d * static_cast<float>(static_cast<int8_t>(p[192 + j]));
          o[j] = -32.0f * s[j];
        }
        break;
      }
      default:
        break;
    }
  }
  switch (type) {
    case DType::kQ2_K:
      grid.qmin = 0;
      grid.qmax = 3;
      break;
    case DType::kQ3_K:
      grid.qmin = 0;
      grid.qmax = 7;
      break;
    case DType::kQ4_0:
    case DType::kQ4_K:
      grid.qmin = 0;
      grid.qmax = 15;
      break;
    case DType::kQ5_0:
    case DType::kQ5_K:
      grid.qmin = 0;
      grid.qmax = 31;
      break;
    case DType::kQ8_0:
      grid.qmin = -128;
      grid.qmax = 127;
      break;
    case DType::kQ6_K:
      grid.qmin = 0;
      grid.qmax = 63;
      break;
    default:
      break;
  }
}

void set_levels(DType type, const int32_t* L, int64_t n, uint8_t* row) {
  const Layout lay = layout_of(type);
  PAGODA_CHECK(n % lay.block == 0);
  for (int64_t b = 0; b < n / lay.block; ++b) {
    uint8_t* p = row + static_cast<size_t>(b) * lay.bytes;
    const int32_t* l = L + b * lay.block;
    switch (type) {
      case DType::kQ4_0:  // element j: low nibble of qs[j], j + 16: high nibble
        for (int j = 0; j < 16; ++j)
          p[2 + j] = static_cast<uint8_t>((l[j] & 0xF) | ((l[j + 16] & 0xF) << 4));
        break;
      case DType::kQ5_0: {  // as Q4_0, fifth bit j of the little-endian qh
        uint32_t qh = 0;
        for (int j = 0; j < 32; ++j)
          qh |= static_cast<uint32_t>((l[j] >> 4) & 1) << j;
        std::memcpy(p + 2, &qh, 4);
        for (int j = 0; j < 16; ++j)
          p[6 + j] = static_cast<uint8_t>((l[j] & 0xF) | ((l[j + 16] & 0xF) << 4));
        break;
      }
      case DType::kQ8_0:
        for (int j = 0; j < 32; ++j)
          p[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(l[j]));
        break;
      case DType::kQ2_K:  // 2-bit planes (block_layouts.h)
        for (int e = 0; e < 256; ++e)
          put_2bit(p + 16, e, l[e]);
        break;
      case DType::kQ3_K:  // low 2 bits as Q2_K; third bit: bit e / 32 of hmask[e % 32]
        std::memset(p, 0, 32);
        for (int e = 0; e < 256; ++e) {
          put_2bit(p + 32, e, l[e]);
          p[e % 32] |= static_cast<uint8_t>(((l[e] >> 2) & 1) << (e / 32));
        }
        break;
      case DType::kQ4_K:
      case DType::kQ5_K: {  // chunk c of 64: low nibbles the first 32, high nibbles the next 32
        const bool five = type == DType::kQ5_K;
        uint8_t* qs = p + (five ? 48 : 16);
        if (five) std::memset(p + 16, 0, 32);
        for (int c = 0; c < 4; ++c) {
          for (int r = 0; r < 32; ++r) {
            const int lo = l[64 * c + r], hi = l[64 * c + r + 32];
            qs[32 * c + r] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
            if (five) {  // fifth bit of element n: bit n / 32 of qh[n % 32]
              p[16 + r] |= static_cast<uint8_t>((((lo >> 4) & 1) << (2 * c)) |
                                                (((hi >> 4) & 1) << (2 * c + 1)));
            }
          }
        }
        break;
      }
      case DType::kQ6_K: {  // halves of 128: ql low/high nibbles, qh 2-bit fields
        uint8_t* ql = p;
        uint8_t* qh = p + 128;
        for (int h = 0; h < 2; ++h) {
          const int32_t* q = l + 128 * h;
          for (int r = 0; r < 32; ++r) {
            const int q1 = q[r], q2 = q[r + 32], q3 = q[r + 64], q4 = q[r + 96];
            ql[64 * h + r] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
            ql[64 * h + r + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
            qh[32 * h + r] = static_cast<uint8_t>(((q1 >> 4) & 3) | (((q2 >> 4) & 3) << 2) |
                                                  (((q3 >> 4) & 3) << 4) | (((q4 >> 4) & 3) << 6));
          }
        }
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace pagoda::convert
