// kernels::lora_expand and kernels::lora_apply: LoRA's low-rank products for every adapter of a
// step (the op fronts; per-ISA expand kernels behind CpuKernels::lora_expand, the shrink on the
// matmul kernels).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/ops.h"
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

// One adapted projection of a step (an adapter's A and B over the rows of one input).
struct LoraJob {
  WeightView a;          // [rank, in], F16 or F32, no packed copy / input order / zero term
  WeightView bt;         // [rank, out] (B transposed), a.dtype; bt.rows == a.rows
  int32_t input = 0;     // into lora_apply's inputs; a.cols is their cols
  float* mid = nullptr;  // [the input's m, rank] of scratch, not shared with another job
  float* y = nullptr;    // row i at y + (input.rows ? input.rows[i] : i) · ldy
  int64_t ldy = 0;       // >= bt.cols
};

// The whole LoRA of one projection input, shrink and expand in ONE parallel op: for every job j
// and row i < m of its input,
//   mid_j(i) = A_j · x(i)   (matmul_grouped's bits: x rounded to A's precision, the matmul kernel)
//   y_j(i) += mid_j(i) · Bt_j   (lora_expand's formula and bits)
// Each thread converts the input rows it needs itself (no shared buffer, no barrier for it). When
// the jobs split evenly across the threads as whole jobs (in order, by cost: several adapters, or
// q/k/v of one), each thread runs its jobs' shrink and expand back to back, so the op pays only
// the barrier its inputs need; otherwise the threads split the shrink's rank rows, meet at one
// barrier, and split the expand's columns. Either way a row's bits depend only on its own input.
// precondition: every a.cols equal to the inputs' cols; index rows in range; y rows of different
// jobs disjoint and disjoint from every mid and input.
void lora_apply(std::span<const GroupedInput> inputs, std::span<const LoraJob> jobs);

}  // namespace pagoda::kernels
