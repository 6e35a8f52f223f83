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
// Only Q4_0 has a packed layout so far; other types return 0 from packed_bytes().
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/weight_view.h"

namespace pagoda::kernels::cpu {

inline constexpr int kPackedTileRows = 8;
inline constexpr size_t kPackedQ4_0BlockBytes = 144;

// Bytes of w's packed copy, or 0 when w.dtype has no packed layout (or w is empty).
size_t packed_bytes(const WeightView& w);
// Writes w's packed copy (packed_bytes(w) bytes) to dst. precondition: packed_bytes(w) > 0.
void pack_weight(const WeightView& w, uint8_t* dst);

}  // namespace pagoda::kernels::cpu
