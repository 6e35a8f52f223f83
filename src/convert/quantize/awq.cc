#include "convert/quantize/awq.h"

#include <algorithm>
#include <cmath>
#include <vector>

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

int64_t clip_group(tensor::DType type) {
  switch (type) {
    case tensor::DType::kQ2_K:
    case tensor::DType::kQ3_K:
    case tensor::DType::kQ6_K:
      return 16;
    default:
      return 32;
  }
}

namespace {

// Σ_ij d_i h_ij d_j over i, j in [c0, c1) (h is [cols, cols]).
double quad_form(const double* d, std::span<const double> h, int64_t cols, int64_t c0, int64_t c1) {
  double s = 0;
  for (int64_t i = c0; i < c1; ++i) {
    if (d[i] == 0) continue;
    const double* hi = h.data() + i * cols;
    double t = 0;
    for (int64_t j = c0; j < c1; ++j)
      t += hi[j] * d[j];
    s += d[i] * t;
  }
  return s;
}

}  // namespace

AwqClipResult awq_clip(tensor::DType type, float* w, int64_t rows, int64_t cols,
                       const float* col_scale, const float* row_scale, std::span<const double> h,
                       int32_t grid, double max_shrink) {
  PAGODA_CHECK(h.size() == static_cast<size_t>(cols * cols));
  const int64_t group = clip_group(type);
  PAGODA_CHECK(cols % group == 0);
  const int64_t num_groups = cols / group;
  const auto steps = std::max<int32_t>(1, static_cast<int32_t>(max_shrink * grid));
  const size_t row_bytes = *tensor::row_size_bytes(type, static_cast<uint64_t>(cols));
  AwqClipResult result;
  int64_t clipped = 0;
  double error = 0, error_before = 0;
#pragma omp parallel reduction(+ : clipped, error, error_before)
  {
    std::vector<float> w0(static_cast<size_t>(cols)), xc(static_cast<size_t>(cols)),
        deq(static_cast<size_t>(cols)), bound(static_cast<size_t>(num_groups)),
        best_ratio(static_cast<size_t>(num_groups));
    std::vector<double> best(static_cast<size_t>(num_groups)), d(static_cast<size_t>(cols));
    std::vector<uint8_t> bytes(row_bytes);
    // d = the row's error in W's space (without the row scale) for the weights xc.
    auto row_error = [&]() {
      kernels::quantize_row(type, xc.data(), bytes.data(), cols);
      kernels::dequantize_row(type, bytes.data(), deq.data(), cols);
      for (int64_t c = 0; c < cols; ++c) {
        const double e = static_cast<double>(w0[c]) - deq[c];
        d[c] = col_scale != nullptr ? e / col_scale[c] : e;
      }
    };
    auto clamp_to = [&](const std::vector<float>& ratio) {
      for (int64_t g = 0; g < num_groups; ++g) {
        const float b = ratio[g] * bound[g];
        for (int64_t c = g * group; c < (g + 1) * group; ++c)
          xc[c] = std::clamp(w0[c], -b, b);
      }
    };
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < rows; ++r) {
      float* wr = w + r * cols;
      std::copy(wr, wr + cols, w0.begin());
      for (int64_t g = 0; g < num_groups; ++g) {
        float m = 0;
        for (int64_t c = g * group; c < (g + 1) * group; ++c)
          m = std::max(m, std::fabs(w0[c]));
        bound[g] = m;
        best[g] = INFINITY;
        best_ratio[g] = 1.0f;
      }
      double before = 0;
      std::vector<float> ratio(static_cast<size_t>(num_groups));
      for (int32_t i = 0; i < steps; ++i) {
        std::fill(ratio.begin(), ratio.end(),
                  1.0f - static_cast<float>(i) / static_cast<float>(grid));
        clamp_to(ratio);
        row_error();
        if (i == 0) before = quad_form(d.data(), h, cols, 0, cols);
        for (int64_t g = 0; g < num_groups; ++g) {
          const double e = quad_form(d.data(), h, cols, g * group, (g + 1) * group);
          if (e < best[g]) {
            best[g] = e;
            best_ratio[g] = ratio[g];
          }
        }
      }
      clamp_to(best_ratio);
      row_error();
      const double after = quad_form(d.data(), h, cols, 0, cols);
      const double rs2 =
          row_scale != nullptr ? static_cast<double>(row_scale[r]) * row_scale[r] : 1;
      error_before += rs2 * before;
      if (after < before) {
        std::copy(xc.begin(), xc.end(), wr);
        error += rs2 * after;
        ++clipped;
      } else {
        error += rs2 * before;
      }
    }
  }
  result.rows_clipped = clipped;
  result.error = error;
  result.error_before = error_before;
  return result;
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
