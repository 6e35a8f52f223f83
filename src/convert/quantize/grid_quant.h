// Fixed quantisation grids of GGUF block types: once a row's block scales (and mins) are chosen,
// every element i can take only the values x̂ = scale[g]·L + offset[g], g = i / group, with an
// integer level L in [qmin, qmax]. The calibrated quantisers (gptq.h, awq.h) choose the scales
// first (the reference round-to-nearest encoding of the row, or the imatrix-weighted one) and
// then choose the levels themselves, writing them back into the same blocks: the bytes stay the
// standard ggml layouts (ggml-common.h) that any GGUF reader decodes.
// Types: Q4_0, Q5_0, Q8_0 (group 32), Q4_K and Q5_K (8 sub-blocks of 32 with a scale and a min),
// Q2_K (16 sub-blocks of 16 with a scale and a min), Q3_K and Q6_K (16 sub-blocks of 16).
#pragma once

#include <cstdint>
#include <vector>

#include "tensor/dtype.h"

namespace pagoda::convert {

// The grid of one row: x̂_i = scale[i / group]·L_i + offset[i / group], L_i in [qmin, qmax].
struct RowGrid {
  int32_t group = 32;
  int32_t qmin = 0;
  int32_t qmax = 0;
  std::vector<float> scale;   // [n / group]
  std::vector<float> offset;  // [n / group]

  // The level nearest to v on group g's grid (qmin..qmax; any level when the scale is 0).
  int32_t level(int64_t g, double v) const;
  double value(int64_t g, int32_t level) const {
    return static_cast<double>(scale[g]) * level + offset[g];
  }
};

// True for the types grid_of_row/set_levels handle.
bool grid_supported(tensor::DType type);

// The grid fixed by an encoded row of n elements (its block scales and mins).
// precondition: grid_supported(type), n % block_size(type) == 0.
void grid_of_row(tensor::DType type, const uint8_t* row, int64_t n, RowGrid& grid);

// Replaces the levels of an encoded row of n elements with L[0..n) (each in the grid's
// [qmin, qmax]), keeping its scales and mins.
void set_levels(tensor::DType type, const int32_t* L, int64_t n, uint8_t* row);

}  // namespace pagoda::convert
