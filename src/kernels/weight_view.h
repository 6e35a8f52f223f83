// WeightView: a non-owning view of a 2-D weight matrix as GGUF stores it: `rows` rows (output
// features) of `cols` elements (input features), each row `row_bytes` long in `dtype`.
// `packed`, when set, is the same matrix in the SIMD kernels' tile layout (kernels::pack_weight,
// cpu/packed_layout.h); kernels that know the layout read it, the others read `data`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tensor/dtype.h"

namespace pagoda::kernels {

struct WeightView {
  tensor::DType dtype = tensor::DType::kF32;
  int64_t rows = 0;  // output features (ggml ne[1])
  int64_t cols = 0;  // input features (ggml ne[0], contiguous)
  size_t row_bytes = 0;
  const uint8_t* data = nullptr;
  const uint8_t* packed = nullptr;  // optional, owned elsewhere
  // The tensor's name in its file ("blk.0.attn_q.weight") when the loader knows it, for the
  // tools that observe matmuls (matmul_observer.h); it lives as long as the model's tensor source.
  std::string_view name = {};
  // Optional [cols]: column j of the stored matrix multiplies input input_order[j] (a permutation
  // of [0, cols)), so y = sum_j W[r][j] x[input_order[j]]. Act-order GPTQ checkpoints are stored
  // with their groups' columns made contiguous (loader/hf/quant_repack.h); matmul gathers x.
  const int32_t* input_order = nullptr;
  // Optional zero-point term of an asymmetric GPTQ/AWQ weight whose levels are stored around the
  // block type's own offset (Q4_0: s * (q - 8), Q8_0: s * (q - 128)): f32 entry (g, r) at
  // zero_term[g * zero_stride + r] for g < zero_groups() (group-major, as GPTQ's scales, so that
  // adding it streams rows). The matrix is W[r][j] = dequantised(r, j) + entry (j / zero_group, r)
  // (j in stored order); matmul adds sum_g entry(g, r) * (the sum of x over stored group g).
  const float* zero_term = nullptr;
  int64_t zero_group = 0;   // stored columns per group (> 0 when zero_term is set)
  int64_t zero_stride = 0;  // >= rows when zero_term is set (the full matrix's rows)

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  int64_t zero_groups() const {
    return zero_term == nullptr ? 0 : (cols + zero_group - 1) / zero_group;
  }
};

// Rows [r0, r0 + n) of w as a matrix of its own (rows are stored one after another, and so are
// the zero term's). precondition: w is not packed yet.
inline WeightView row_slice(const WeightView& w, int64_t r0, int64_t n) {
  WeightView out = w;
  out.rows = n;
  out.data = w.data + static_cast<size_t>(r0) * w.row_bytes;
  if (w.zero_term != nullptr) out.zero_term = w.zero_term + r0;
  return out;
}

}  // namespace pagoda::kernels
