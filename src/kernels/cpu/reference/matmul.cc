// Reference matmul: y[i, r] = Σ_c x[i, c] · w[r, c] (+ bias[r]). The weight row is dequantised
// to f32 once per output row and each dot product is accumulated in double, in column order, so
// every output depends only on its own x row and weight row (batched == alone, bit for bit).
#include <cstdint>
#include <vector>

#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/reference/quant_ref.h"

namespace pagoda::kernels::cpu::reference {
namespace {

constexpr int64_t kMinWorkPerThread = 1 << 16;  // multiply-adds below which threads cost more

float dot(const float* a, const float* b, int64_t n) {
  double acc = 0;
  for (int64_t c = 0; c < n; ++c)
    acc += static_cast<double>(a[c]) * static_cast<double>(b[c]);
  return static_cast<float>(acc);
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t m, float* y, const float* bias) {
  const int64_t rows = w.rows;
  const int64_t cols = w.cols;
  const bool parallel = rows > 1 && rows * cols * m >= 2 * kMinWorkPerThread;
#pragma omp parallel if (parallel)
  {
    std::vector<float> row_buf(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* wr;
      if (w.dtype == tensor::DType::kF32 &&
          reinterpret_cast<uintptr_t>(w.row(r)) % alignof(float) == 0) {
        wr = reinterpret_cast<const float*>(w.row(r));
      } else {
        dequantize_row(w.dtype, w.row(r), row_buf.data(), cols);
        wr = row_buf.data();
      }
      for (int64_t i = 0; i < m; ++i) {
        float v = dot(x + i * cols, wr, cols);
        if (bias != nullptr) v += bias[r];
        y[i * rows + r] = v;
      }
    }
  }
}

void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    dequantize_row(table.dtype, table.row(ids[i]), out + i * table.cols, table.cols);
  }
}

}  // namespace pagoda::kernels::cpu::reference
