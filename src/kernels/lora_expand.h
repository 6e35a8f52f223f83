// kernels::lora_expand: LoRA's B product for every adapter of a step in one call (the op front;
// per-ISA kernels behind CpuKernels::lora_expand).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/weight_view.h"

namespace pagoda::kernels {

// Low-rank expansion (LoRA's B product; punica/SGMV's "expand"): for i < rows and o < out,
//   y(i)[o] += Σ_{k<rank} mid[i · rank + k] · bt[k, o]
// with bt a WeightView of F16 or F32 rows [rank = bt->rows, out = bt->cols] (B stored transposed,
// so the loop over o is a row of bt: vectorised along the output, no reduction), the sum taken in
// order k = 0, 1, ... by fused multiply-adds onto 0 and then added to y. y(i) is the `out` floats
// at y + (index ? index[i] : i) · ldy. mid stays f32 (not rounded). Each y row depends only on its
// own mid row: batched == alone. One call runs every job (all adapters and projections of a step),
// their columns split across the threads in one step. precondition: jobs' y rows do not overlap
// each other, nor mid.
struct LoraExpandJob {
  const WeightView* bt = nullptr;  // [rank, out], F16 or F32
  const float* mid = nullptr;      // [rows, rank]
  float* y = nullptr;
  int64_t ldy = 0;                 // >= out
  const int32_t* index = nullptr;  // [rows] or nullptr
  int64_t rows = 0;
};
void lora_expand(std::span<const LoraExpandJob> jobs);

}  // namespace pagoda::kernels
