// Pre-packed weights (see packed_layout.h): plain byte moves, no ISA-specific code.
#include "kernels/cpu/packed_layout.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"
#include "kernels/cpu/block_layouts.h"

namespace pagoda::kernels::cpu {

size_t packed_bytes(const WeightView& w) {
  if (w.dtype != tensor::DType::kQ4_0 || w.rows <= 0 || w.cols <= 0 || w.cols % kQK != 0) return 0;
  const auto tiles = static_cast<size_t>((w.rows + kPackedTileRows - 1) / kPackedTileRows);
  return tiles * static_cast<size_t>(w.cols / kQK) * kPackedQ4_0BlockBytes;
}

void pack_weight(const WeightView& w, uint8_t* dst) {
  PAGODA_CHECK(packed_bytes(w) > 0);
  PAGODA_CHECK(w.row_bytes == static_cast<size_t>(w.cols / kQK) * sizeof(BlockQ4_0));
  const int64_t nb = w.cols / kQK;
  for (int64_t r0 = 0; r0 < w.rows; r0 += kPackedTileRows) {
    const uint8_t* rows[kPackedTileRows];
    for (int r = 0; r < kPackedTileRows; ++r)
      rows[r] = w.row(std::min<int64_t>(r0 + r, w.rows - 1));
    for (int64_t b = 0; b < nb; ++b) {
      const size_t off = static_cast<size_t>(b) * sizeof(BlockQ4_0);
      for (int r = 0; r < kPackedTileRows; ++r) {
        const uint8_t* blk = rows[r] + off;
        std::memcpy(dst + 2 * r, blk, 2);  // d
        for (int g = 0; g < 4; ++g)
          std::memcpy(dst + 16 + 32 * g + 4 * r, blk + 2 + 4 * g, 4);
      }
      dst += kPackedQ4_0BlockBytes;
    }
  }
}

}  // namespace pagoda::kernels::cpu
