// Pre-packed weights (see packed_layout.h): plain byte moves, no ISA-specific code.
#include "kernels/cpu/packed_layout.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/block_layouts.h"

namespace pagoda::kernels::cpu {

namespace {

// Per type: elements and bytes of a block of one row, bytes of a packed tile block.
struct PackedType {
  int64_t block = 0;
  size_t row_block_bytes = 0, tile_block_bytes = 0;
};

PackedType packed_type(tensor::DType t) {
  switch (t) {
    case tensor::DType::kQ4_0:
      return {kQK, sizeof(BlockQ4_0), kPackedQ4_0BlockBytes};
    case tensor::DType::kQ8_0:
      return {kQK, sizeof(BlockQ8_0), kPackedQ8_0BlockBytes};
    case tensor::DType::kQ4_1:
      return {kQK, sizeof(BlockQ4_1), kPackedQ4_1BlockBytes};
    case tensor::DType::kQ5_0:
      return {kQK, sizeof(BlockQ5_0), kPackedQ5_0BlockBytes};
    case tensor::DType::kQ5_1:
      return {kQK, sizeof(BlockQ5_1), kPackedQ5_1BlockBytes};
    case tensor::DType::kQ2_K:
      return {kQK_K, sizeof(BlockQ2_K), kPackedQ2_KBlockBytes};
    case tensor::DType::kQ3_K:
      return {kQK_K, sizeof(BlockQ3_K), kPackedQ3_KBlockBytes};
    case tensor::DType::kQ4_K:
      return {kQK_K, sizeof(BlockQ4_K), kPackedQ4_KBlockBytes};
    case tensor::DType::kQ5_K:
      return {kQK_K, sizeof(BlockQ5_K), kPackedQ5_KBlockBytes};
    case tensor::DType::kQ6_K:
      return {kQK_K, sizeof(BlockQ6_K), kPackedQ6_KBlockBytes};
    default:
      return {};
  }
}

// Writes 8 rows' bytes [src_off, src_off + n) (n a multiple of 4) as n / 4 vectors of 32 bytes:
// vector v holds at 4r + i byte src_off + 4v + i of row r.
void interleave4(const uint8_t* const* blks, size_t src_off, size_t n, uint8_t* dst) {
  for (size_t v = 0; v < n / 4; ++v)
    for (int r = 0; r < kPackedTileRows; ++r)
      std::memcpy(dst + 32 * v + 4 * r, blks[r] + src_off + 4 * v, 4);
}

// Writes 8 rows' `n` bytes at src_off one row after the other.
void concat(const uint8_t* const* blks, size_t src_off, size_t n, uint8_t* dst) {
  for (int r = 0; r < kPackedTileRows; ++r)
    std::memcpy(dst + n * r, blks[r] + src_off, n);
}

// Writes the 8 rows' Q5 fifth bits (the u32 qh at src_off) as 32 bytes: bit g of byte 4r + i is
// bit 4g + i of row r's qh.
void spread_fifth_bits(const uint8_t* const* blks, size_t src_off, uint8_t* dst) {
  for (int r = 0; r < kPackedTileRows; ++r) {
    uint32_t qh;
    std::memcpy(&qh, blks[r] + src_off, 4);
    for (int i = 0; i < 4; ++i) {
      uint8_t v = 0;
      for (int g = 0; g < 8; ++g)
        v = static_cast<uint8_t>(v | (((qh >> (4 * g + i)) & 1u) << g));
      dst[4 * r + i] = v;
    }
  }
}

void pack_tile_block(tensor::DType t, const uint8_t* const* blks, uint8_t* dst) {
  switch (t) {
    case tensor::DType::kQ4_0:
      concat(blks, 0, 2, dst);             // d
      interleave4(blks, 2, 16, dst + 16);  // qs
      break;
    case tensor::DType::kQ8_0:
      concat(blks, 0, 2, dst);             // d
      interleave4(blks, 2, 32, dst + 16);  // qs
      break;
    case tensor::DType::kQ4_1:
      concat(blks, 0, 2, dst);             // d
      concat(blks, 2, 2, dst + 16);        // m
      interleave4(blks, 4, 16, dst + 32);  // qs
      break;
    case tensor::DType::kQ5_0:
      concat(blks, 0, 2, dst);                // d
      interleave4(blks, 6, 16, dst + 16);     // qs
      spread_fifth_bits(blks, 2, dst + 144);  // qh
      break;
    case tensor::DType::kQ5_1:
      concat(blks, 0, 2, dst);                // d
      concat(blks, 2, 2, dst + 16);           // m
      interleave4(blks, 8, 16, dst + 32);     // qs
      spread_fifth_bits(blks, 4, dst + 160);  // qh
      break;
    case tensor::DType::kQ2_K:
      concat(blks, 80, 2, dst);       // d
      concat(blks, 82, 2, dst + 16);  // dmin
      for (int r = 0; r < kPackedTileRows; ++r) {
        for (int j = 0; j < 16; ++j)  // scales and mins, row-minor
          dst[32 + 8 * j + r] = blks[r][j];
      }
      interleave4(blks, 16, 64, dst + 160);  // qs
      break;
    case tensor::DType::kQ3_K:
      concat(blks, 108, 2, dst);  // d
      for (int r = 0; r < kPackedTileRows; ++r) {
        for (int j = 0; j < 16; ++j)  // signed scales, row-minor
          dst[16 + 8 * j + r] = static_cast<uint8_t>(q3_k_scale(j, blks[r] + 96) - 32);
      }
      interleave4(blks, 32, 64, dst + 144);  // qs
      interleave4(blks, 0, 32, dst + 656);   // hmask
      break;
    case tensor::DType::kQ4_K:
    case tensor::DType::kQ5_K: {
      const bool q5 = t == tensor::DType::kQ5_K;
      concat(blks, 0, 2, dst);       // d
      concat(blks, 2, 2, dst + 16);  // dmin
      std::memset(dst + 96, 0, 32);
      for (int r = 0; r < kPackedTileRows; ++r) {
        for (int j = 0; j < 8; ++j) {  // scales and mins, row-minor: low nibbles, then top bits
          uint8_t sc = 0, mn = 0;
          k4_scale_min(j, blks[r] + 4, &sc, &mn);
          const int i = 8 * j + r;
          dst[32 + i] = static_cast<uint8_t>((sc & 15) | (mn & 15) << 4);
          dst[96 + i % 16] = static_cast<uint8_t>(dst[96 + i % 16] | (sc >> 4) << (2 * (i / 16)));
          dst[112 + i % 16] = static_cast<uint8_t>(dst[112 + i % 16] | (mn >> 4) << (2 * (i / 16)));
        }
      }
      interleave4(blks, q5 ? 48 : 16, 128, dst + kPackedQ4_KQsOffset);  // qs
      if (q5) interleave4(blks, 16, 32, dst + kPackedQ4_KBlockBytes);   // qh
      break;
    }
    case tensor::DType::kQ6_K:
      concat(blks, 208, 2, dst);  // d
      for (int r = 0; r < kPackedTileRows; ++r) {
        for (int j = 0; j < 16; ++j)  // scales, row-minor
          dst[16 + 8 * j + r] = blks[r][192 + j];
      }
      interleave4(blks, 0, 128, dst + 144);    // ql
      interleave4(blks, 128, 64, dst + 1168);  // qh
      break;
    default:
      PAGODA_CHECK_MSG(false, "no packed layout");
  }
}

}  // namespace

size_t packed_bytes(const WeightView& w) {
  const PackedType p = packed_type(w.dtype);
  if (p.block == 0 || w.rows <= 0 || w.cols <= 0 || w.cols % p.block != 0) return 0;
  const auto tiles = static_cast<size_t>((w.rows + kPackedTileRows - 1) / kPackedTileRows);
  return tiles * static_cast<size_t>(w.cols / p.block) * p.tile_block_bytes;
}

void pack_weight(const WeightView& w, uint8_t* dst) {
  PAGODA_CHECK(packed_bytes(w) > 0);
  const PackedType p = packed_type(w.dtype);
  const int64_t nb = w.cols / p.block;
  PAGODA_CHECK(w.row_bytes == static_cast<size_t>(nb) * p.row_block_bytes);
  const int64_t num_tiles = (w.rows + kPackedTileRows - 1) / kPackedTileRows;
  const size_t tile_bytes = static_cast<size_t>(nb) * p.tile_block_bytes;
  const bool parallel = static_cast<size_t>(num_tiles) * tile_bytes > (size_t{1} << 20);
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < num_tiles; ++t) {
    uint8_t* out = dst + static_cast<size_t>(t) * tile_bytes;
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blks[kPackedTileRows];
      for (int r = 0; r < kPackedTileRows; ++r)  // a short last tile repeats its last row
        blks[r] = w.row(std::min<int64_t>(t * kPackedTileRows + r, w.rows - 1)) +
                  static_cast<size_t>(b) * p.row_block_bytes;
      pack_tile_block(w.dtype, blks, out);
      out += p.tile_block_bytes;
    }
  }
}

}  // namespace pagoda::kernels::cpu
