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

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
};

}  // namespace pagoda::kernels
