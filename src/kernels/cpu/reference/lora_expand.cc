// LoRA's expand (kernels/ops.h lora_expand): each output element is its own chain of fused
// multiply-adds over k in order, onto 0, then added to y; the SIMD paths compute the same chains
// in lanes along the output, so they give the same bits.
#include <cmath>
#include <cstring>

#include "kernels/cpu/reference/ops_ref.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {

void lora_expand(const WeightView& bt, const float* mid, int64_t rows, const int32_t* index,
                 float* y, int64_t ldy, int64_t c0, int64_t c1) {
  constexpr int64_t kChunk = 64;
  const int64_t rank = bt.rows;
  const bool f16 = bt.dtype == tensor::DType::kF16;
  for (int64_t i = 0; i < rows; ++i) {
    const float* m = mid + i * rank;
    float* yr = y + (index != nullptr ? static_cast<int64_t>(index[i]) : i) * ldy;
    for (int64_t o0 = c0; o0 < c1; o0 += kChunk) {
      const int64_t n = c1 - o0 < kChunk ? c1 - o0 : kChunk;
      float acc[kChunk] = {};
      for (int64_t k = 0; k < rank; ++k) {
        const uint8_t* row = bt.row(k);
        for (int64_t j = 0; j < n; ++j) {
          float b;
          if (f16) {
            uint16_t h;
            std::memcpy(&h, row + 2 * (o0 + j), 2);
            b = tensor::fp16_to_fp32(h);
          } else {
            std::memcpy(&b, row + 4 * (o0 + j), 4);
          }
          acc[j] = std::fma(m[k], b, acc[j]);
        }
      }
      for (int64_t j = 0; j < n; ++j)
        yr[o0 + j] += acc[j];
    }
  }
}

}  // namespace pagoda::kernels::cpu::reference
