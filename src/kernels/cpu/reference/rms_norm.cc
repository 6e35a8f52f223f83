// Reference RMS norm, arranged as ggml does it: Σx² in double (of float squares, in
// sum_squares.h's order), the mean rounded to float, scale = 1 / sqrtf(mean + eps), then
// (x · scale) · weight.
#include <cmath>

#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/sum_squares.h"

namespace pagoda::kernels::cpu::reference {

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * dim;
    float* yr = y + r * dim;
    double partial[kSquareLanes] = {};
    const double sum = sum_squares_finish(partial, xr, 0, dim);
    const auto mean = static_cast<float>(sum / static_cast<double>(dim));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < dim; ++i)
      yr[i] = (xr[i] * scale) * weight[i];
  }
}

}  // namespace pagoda::kernels::cpu::reference
