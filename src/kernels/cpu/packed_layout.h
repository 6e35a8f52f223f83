// Pre-packed weights: a copy of a quantised matrix in the x86 kernels' 8-row tile layout, made
// once at load time, so matmuls stream one contiguous run of bytes per tile instead of gathering
// 8 interleaved rows (decode) or repacking every tile for every batch (prefill, batched decode).
// The values are the same: a packed and an unpacked matmul give the same bits.
//
// Layout (Q4_0): tiles of 8 consecutive rows (the last tile repeats its last row), tile t at
// t * tile_bytes, tile_bytes = blocks_per_row * 144. Block b of a tile, at b * 144:
//   bytes [0, 16)    the 8 rows' scales d (f16), row r at 2r;
//   bytes [16, 144)  4 vectors of 32 bytes: vector g (0..3) holds at 4r + i byte 4g + i of row
//                    r's nibbles qs, so its low nibbles are levels 4g + i and its high nibbles
//                    levels 16 + 4g + i (block_layouts.h's element order).
//
// Q8_0: 272-byte tile blocks (8 x 34): [0, 16) the 8 rows' scales d (f16, row r at 2r); [16, 272)
//   8 vectors, vector g holding at 4r + i byte 4g + i of row r's qs (levels 4g + i).
// Q4_K: 1152-byte tile blocks (one per 256-element super-block; 8 rows' bytes exactly):
//   [0, 16) d and [16, 32) dmin (f16, row r at 2r); [32, 96) the low 4 bits of the 6-bit scales
//   and mins, byte 32 + 8j + r = row r's scale (low nibble) and min (high nibble) of sub-block j;
//   [96, 112) and [112, 128) their top 2 bits, the scales' then the mins': value index
//   i = 8j + r at bits 2 (i / 16) .. 2 (i / 16) + 1 of byte i % 16 (so one 16-bit shift and a mask
//   put 16 values' bits in place); [128, 1152) 32 vectors, vector 8c + g (c, g < 4, 8) holding at
//   4r + i byte 32c + 4g + i of row r's qs (low nibbles: sub-block 2c, high: 2c + 1).
// Q5_K: 1408-byte tile blocks: Q4_K's 1152 bytes (qs from byte 48 of a row block), then [1152,
//   1408) 8 qh vectors, vector g holding at 4r + i byte 4g + i of row r's qh.
// Q6_K: 1680-byte tile blocks (8 x 210):
//   [0, 16) d (f16); [16, 144) the int8 scales, sub-block j's 8 rows at 16 + 8j + r;
//   [144, 1168) 32 ql vectors, vector 16h + 8j + g holding at 4r + i ql[64h + 32j + 4g + i]
//   of row r; [1168, 1680) 16 qh vectors, vector 8h + g holding at 4r + i qh[32h + 4g + i].
// Q4_1: 160-byte tile blocks (8 x 20): [0, 16) d, [16, 32) m (f16, row r at 2r); [32, 160) qs as
//   in Q4_0.
// Q5_0 / Q5_1: 176 / 192-byte tile blocks (8 x 22 / 8 x 24): Q4_0's / Q4_1's bytes, then 32 bytes
//   of fifth bits: bit g of byte 4r + i is the fifth bit of row r's level 4g + i (bit 4g + i of
//   its qh), so one shift and one mask put vector g's fifth bits in place.
// Q2_K: 672-byte tile blocks (8 x 84): [0, 16) d and [16, 32) dmin (f16); [32, 160) the scale
//   bytes as stored (low nibble scale, high nibble min), sub-block j's 8 rows at 32 + 8j + r;
//   [160, 672) 16 qs vectors, vector 8h + g holding at 4r + i qs[32h + 4g + i] of row r.
// Q3_K: 912-byte tile blocks (32 bytes more than 8 rows): [0, 16) d (f16); [16, 144) the
//   6-bit scales decoded to signed bytes (minus 32), sub-block j's 8 rows at 16 + 8j + r (as
//   Q6_K); [144, 656) qs as in Q2_K; [656, 912) 8 hmask vectors, vector g holding at 4r + i
//   hmask[4g + i] of row r.
// Scales sit row-minor so a SIMD load gives one sub-block's scale for all 8 rows.
// Other types have no packed layout: packed_bytes() returns 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/weight_view.h"

namespace pagoda::kernels::cpu {

inline constexpr int kPackedTileRows = 8;
inline constexpr size_t kPackedQ4_0BlockBytes = 144;
inline constexpr size_t kPackedQ8_0BlockBytes = 272;
inline constexpr size_t kPackedQ4_1BlockBytes = 160;
inline constexpr size_t kPackedQ5_0BlockBytes = 176;
inline constexpr size_t kPackedQ5_1BlockBytes = 192;
inline constexpr size_t kPackedQ2_KBlockBytes = 672;
inline constexpr size_t kPackedQ3_KBlockBytes = 912;
inline constexpr size_t kPackedQ4_KBlockBytes = 1152;
inline constexpr size_t kPackedQ4_KQsOffset = 128;  // Q4_K / Q5_K: where the qs vectors start
inline constexpr size_t kPackedQ5_KBlockBytes = 1408;
inline constexpr size_t kPackedQ6_KBlockBytes = 1680;

// Bytes of w's packed copy, or 0 when w.dtype has no packed layout (or w is empty).
size_t packed_bytes(const WeightView& w);
// Writes w's packed copy (packed_bytes(w) bytes) to dst. precondition: packed_bytes(w) > 0.
void pack_weight(const WeightView& w, uint8_t* dst);

}  // namespace pagoda::kernels::cpu
