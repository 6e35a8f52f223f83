#include "convert/quantize/awq.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "convert/quantize/gptq.h"
#include "kernels/quant.h"

namespace pagoda::convert {

void rtn_scaled(tensor::DType type, const float* w, int64_t rows, int64_t cols, const float* s,
                float* out, uint8_t* encoded) {
  const size_t row_bytes = *tensor::row_size_bytes(type, cols);
#pragma omp parallel
  {
    std::vector<float> x(static_cast<size_t>(cols));
    std::vector<uint8_t> bytes(row_bytes);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const float* wr = w + r * cols;
      for (int64_t c = 0; c < cols; ++c)
        x[c] = s != nullptr ? wr[c] * s[c] : wr[c];
      uint8_t* dst =
          encoded != nullptr ? encoded + static_cast<size_t>(r) * row_bytes : bytes.data();
      kernels::quantize_row(type, x.data(), dst, cols);
      float* o = out + r * cols;
      kernels::dequantize_row(type, dst, o, cols);
      if (s != nullptr) {
        for (int64_t c = 0; c < cols; ++c)
          o[c] /= s[c];
      }
    }
  }
}

AwqScales awq_search(std::span<const AwqMatrix> matrices, int64_t cols,
                     std::span<const double> mean_abs, std::span<const double> h, int32_t grid) {
  PAGODA_CHECK(mean_abs.size() == static_cast<size_t>(cols));
  AwqScales best;
  best.error = INFINITY;
  std::vector<float> s(static_cast<size_t>(cols));
  std::vector<float> deq;
  for (int32_t k = 0; k < std::max(1, grid); ++k) {
    const double alpha = static_cast<double>(k) / std::max(1, grid);
    double smax = 0, smin = INFINITY;
    std::vector<double> raw(static_cast<size_t>(cols));
    for (int64_t c = 0; c < cols; ++c) {
      raw[c] = std::max(std::pow(mean_abs[c], alpha), 1e-4);
      smax = std::max(smax, raw[c]);
      smin = std::min(smin, raw[c]);
    }
    const double norm = std::sqrt(smax * smin);
    for (int64_t c = 0; c < cols; ++c)
      s[c] = static_cast<float>(raw[c] / norm);
    double err = 0;
    for (const AwqMatrix& m : matrices) {
      deq.resize(static_cast<size_t>(m.rows * cols));
      rtn_scaled(m.type, m.w, m.rows, cols, k == 0 ? nullptr : s.data(), deq.data());
      err += output_error(m.w, deq.data(), m.rows, cols, h);
    }
    if (k == 0) best.error_rtn = err;
    if (err < best.error) {
      best.error = err;
      best.alpha = alpha;
      best.s = s;
    }
  }
  if (best.alpha == 0) best.s.assign(static_cast<size_t>(cols), 1.0f);
  return best;
}

}  // namespace pagoda::convert
