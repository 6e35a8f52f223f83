// Activations as a quantised matmul sees them. Like ggml, every matmul first converts each
// activation row to its weight type's "vec-dot type" and then takes block dot products in that
// form (integer sums inside a block, scaled by both blocks' scales):
//   Q4_0, Q5_0, Q8_0 -> Q8_0      Q4_1, Q5_1 -> Q8_1      Q2_K .. Q6_K -> Q8_K
//   F16 -> F16 (values rounded to half)    BF16 -> BF16 (rounded to bfloat16)    F32 -> F32
// ActLayout describes one converted row of n elements inside a byte buffer (structure of arrays,
// every array 64-byte aligned relative to the row start, row_bytes a multiple of 64):
//   Q8_0 / Q8_1: int8 qs[n] | float d[n/32] | float s[n/32] | int16 sums[n/32]
//     d: the block scale as the dot uses it (the f16-rounded scale, as a float);
//     s (Q8_1 only): f16(Σqs · unrounded d), as a float (ggml's block_q8_1::s);
//     sums: Σqs of the block (lets SIMD paths fold Q4_0's "-8" and Q5_0's "-16" offsets).
//   Q8_K:        int8 qs[n] | float d[n/256] | int16 sums[n/16] (ggml's bsums)
//   F32/F16/BF16: float vals[n] (already rounded to the type's precision)
// The conversions are bit-exact with ggml's quantize_row_q8_0_ref / q8_1_ref / q8_K_ref and its
// f16/bf16 round-to-nearest-even.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace pagoda::kernels::cpu {

enum class ActType { kF32, kF16, kBF16, kQ8_0, kQ8_1, kQ8_K };

// The vec-dot type of a weight type. precondition: kernels::can_dequantize(weight).
ActType act_type_for(tensor::DType weight);

struct ActLayout {
  ActType type = ActType::kF32;
  int64_t n = 0;          // elements per row
  size_t d_offset = 0;    // float d[] (quantised types)
  size_t s_offset = 0;    // float s[] (Q8_1)
  size_t sum_offset = 0;  // int16 sums[]
  size_t row_bytes = 0;   // stride between rows; a multiple of 64
  // Set by the op front (kernels/ops.cc) when the m rows are followed by the active table's
  // grouped form of them (CpuKernels::group_acts), which its matmul kernels may then read.
  bool grouped = false;
};

// precondition: n is a multiple of the type's block size (32 for Q8_0/Q8_1, 256 for Q8_K).
ActLayout act_layout(ActType type, int64_t n);

// Typed pointers into one converted row.
struct ActRow {
  const int8_t* qs = nullptr;
  const float* d = nullptr;
  const float* s = nullptr;
  const int16_t* sums = nullptr;
  const float* vals = nullptr;
};

inline ActRow act_row(const ActLayout& l, const uint8_t* row) {
  ActRow a;
  if (l.type == ActType::kF32 || l.type == ActType::kF16 || l.type == ActType::kBF16) {
    a.vals = reinterpret_cast<const float*>(row);
  } else {
    a.qs = reinterpret_cast<const int8_t*>(row);
    a.d = reinterpret_cast<const float*>(row + l.d_offset);
    a.s = reinterpret_cast<const float*>(row + l.s_offset);
    a.sums = reinterpret_cast<const int16_t*>(row + l.sum_offset);
  }
  return a;
}

}  // namespace pagoda::kernels::cpu
