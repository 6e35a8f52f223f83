// Reference matmul rows and the reference kernel table. y[i, r] = vec_dot(w_r, act_i) (+ bias[r]):
// every output depends only on its own weight row and activation row (batched == alone).
#include <cstdint>

#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/reference/quant_ref.h"

namespace pagoda::kernels::cpu::reference {

void matmul_rows(const WeightView& w, const ActLayout& l, const uint8_t* acts, int64_t m,
                 const float* bias, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t i = 0; i < m; ++i) {
      const ActRow a = act_row(l, acts + static_cast<size_t>(i) * l.row_bytes);
      float v = vec_dot(w.dtype, w.row(r), a, w.cols);
      if (bias != nullptr) v += bias[r];
      y[i * ldy + r] = v;
    }
  }
}

void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    dequantize_row(table.dtype, table.row(ids[i]), out + i * table.cols, table.cols);
  }
}

namespace {
MatmulRowsFn matmul_for(tensor::DType) {
  return &matmul_rows;
}
}  // namespace

}  // namespace pagoda::kernels::cpu::reference

namespace pagoda::kernels::cpu {

const CpuKernels* reference_kernels() {
  static const CpuKernels table = [] {
    CpuKernels k;
    k.isa = Isa::kScalar;
    k.quantize_acts = &reference::quantize_acts;
    k.matmul_rows = &reference::matmul_for;
    return k;
  }();
  return &table;
}

}  // namespace pagoda::kernels::cpu
