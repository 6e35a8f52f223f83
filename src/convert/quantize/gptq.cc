#include "convert/quantize/gptq.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "base/check.h"
#include "convert/quantize/grid_quant.h"
#include "kernels/quant.h"

namespace pagoda::convert {
namespace {

// In-place lower Cholesky factor of a [n, n] row-major SPD matrix (upper part left as is).
bool cholesky_lower(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double* aj = a.data() + j * n;
    double d = aj[j];
    for (int64_t k = 0; k < j; ++k)
      d -= aj[k] * aj[k];
    if (!(d > 0) || !std::isfinite(d)) return false;
    const double ljj = std::sqrt(d);
    aj[j] = ljj;
#pragma omp parallel for schedule(static) if (n - j > 256)
    for (int64_t i = j + 1; i < n; ++i) {
      double* ai = a.data() + i * n;
      double s = ai[j];
      for (int64_t k = 0; k < j; ++k)
        s -= ai[k] * aj[k];
      ai[j] = s / ljj;
    }
  }
  return true;
}

// U upper with H⁻¹ = UᵀU, from the SPD matrix hp. Returns false if hp is not PD.
bool inverse_upper_cholesky(const std::vector<double>& hp, int64_t n, std::vector<double>& u) {
  std::vector<double> l = hp;
  if (!cholesky_lower(l, n)) return false;
  // Linv = L⁻¹ (lower), by forward substitution per column.
  std::vector<double> linv(static_cast<size_t>(n * n), 0.0);
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t c = 0; c < n; ++c) {
    linv[c * n + c] = 1.0 / l[c * n + c];
    for (int64_t i = c + 1; i < n; ++i) {
      double s = 0;
      for (int64_t k = c; k < i; ++k)
        s += l[i * n + k] * linv[k * n + c];
      linv[i * n + c] = -s / l[i * n + i];
    }
  }
  // H⁻¹ = Linvᵀ Linv.
  std::vector<double> hinv(static_cast<size_t>(n * n));
#pragma omp parallel for schedule(dynamic, 16)
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      double s = 0;
      for (int64_t k = std::max(i, j); k < n; ++k)
        s += linv[k * n + i] * linv[k * n + j];
      hinv[i * n + j] = s;
      hinv[j * n + i] = s;
    }
  }
  if (!cholesky_lower(hinv, n)) return false;
  u.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j)
      u[j * n + i] = hinv[i * n + j];  // U = Lᵀ
  }
  return true;
}

}  // namespace

Status gptq_quantize(tensor::DType type, const float* w, int64_t rows, int64_t cols,
                     std::span<const double> h, const GptqOptions& options, uint8_t* encoded) {
  PAGODA_CHECK(grid_supported(type));
  PAGODA_CHECK(h.size() == static_cast<size_t>(cols * cols));
  const int64_t n = cols;
  // Processing order.
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  if (options.act_order) {
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t a, int64_t b) { return h[a * n + a] > h[b * n + b]; });
  }
  // Permuted H with dead columns fixed and damping.
  std::vector<double> hp(static_cast<size_t>(n * n));
  double mean_diag = 0;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j)
      hp[i * n + j] = h[perm[i] * n + perm[j]];
  }
  for (int64_t i = 0; i < n; ++i) {
    if (hp[i * n + i] == 0) hp[i * n + i] = 1;
    mean_diag += hp[i * n + i];
  }
  mean_diag /= static_cast<double>(n);
  std::vector<double> u;
  double damp = options.damp;
  bool ok = false;
  for (int attempt = 0; attempt < 4 && !ok; ++attempt, damp *= 10) {
    std::vector<double> hd = hp;
    for (int64_t i = 0; i < n; ++i)
      hd[i * n + i] += damp * mean_diag;
    ok = inverse_upper_cholesky(hd, n, u);
  }
  if (!ok) {
    return invalid_argument(
        "GPTQ: the Hessian ({} columns) is not positive definite even with "
        "damping {}",
        cols, damp / 10);
  }
  const size_t row_bytes = *tensor::row_size_bytes(type, cols);
  const int64_t block = std::max<int32_t>(1, options.block);
  const auto type_block = static_cast<int64_t>(tensor::dtype_info(type).block_size);
  // At the first column of a GGUF block every column of that block is up to date when the
  // blocks nest (a block of 128 holds four of 32 and is half of 256).
  const bool running = options.running_grid && !options.act_order &&
                       (block % type_block == 0 || type_block % block == 0);
  const size_t type_block_bytes = *tensor::row_size_bytes(type, static_cast<uint64_t>(type_block));
#pragma omp parallel
  {
    RowGrid grid, block_grid;
    std::vector<float> xb(static_cast<size_t>(type_block));
    std::vector<double> x(static_cast<size_t>(n)), err(static_cast<size_t>(block));
    std::vector<int32_t> levels(static_cast<size_t>(n));
#pragma omp for schedule(dynamic, 4)
    for (int64_t r = 0; r < rows; ++r) {
      uint8_t* row = encoded + static_cast<size_t>(r) * row_bytes;
      grid_of_row(type, row, cols, grid);
      for (int64_t i = 0; i < n; ++i)
        x[i] = w[r * cols + perm[i]];
      for (int64_t i1 = 0; i1 < n; i1 += block) {
        const int64_t i2 = std::min(n, i1 + block);
        for (int64_t i = i1; i < i2; ++i) {
          const int64_t col = perm[i];
          if (running && col % type_block == 0) {  // choose this block's scales now
            for (int64_t k = 0; k < type_block; ++k)
              xb[k] = static_cast<float>(x[i + k]);
            uint8_t* dst = row + static_cast<size_t>(col / type_block) * type_block_bytes;
            kernels::quantize_row(type, xb.data(), dst, type_block);
            grid_of_row(type, dst, type_block, block_grid);
            const int64_t g0 = col / grid.group;
            std::copy(block_grid.scale.begin(), block_grid.scale.end(), grid.scale.begin() + g0);
            std::copy(block_grid.offset.begin(), block_grid.offset.end(), grid.offset.begin() + g0);
          }
          const int32_t l = grid.level(col / grid.group, x[i]);
          levels[col] = l;
          const double e = (x[i] - grid.value(col / grid.group, l)) / u[i * n + i];
          err[i - i1] = e;
          const double* ui = u.data() + i * n;
          for (int64_t j = i + 1; j < i2; ++j)
            x[j] -= e * ui[j];
        }
        // The block's errors, spread over the columns after it.
        for (int64_t i = i1; i < i2; ++i) {
          const double e = err[i - i1];
          if (e == 0) continue;
          const double* ui = u.data() + i * n;
          for (int64_t j = i2; j < n; ++j)
            x[j] -= e * ui[j];
        }
      }
      set_levels(type, levels.data(), cols, row);
    }
  }
  return Status();
}

double output_error(const float* w, const float* wq, int64_t rows, int64_t cols,
                    std::span<const double> h) {
  PAGODA_CHECK(h.size() == static_cast<size_t>(cols * cols));
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    std::vector<double> d(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        d[c] = static_cast<double>(w[r * cols + c]) - wq[r * cols + c];
      double s = 0;
      for (int64_t i = 0; i < cols; ++i) {
        if (d[i] == 0) continue;
        const double* hi = h.data() + i * cols;
        double t = 0;
        for (int64_t j = 0; j < cols; ++j)
          t += hi[j] * d[j];
        s += d[i] * t;
      }
      total += s;
    }
  }
  return total;
}

}  // namespace pagoda::convert
