// Op fronts: check each op's shape contract (violations are bugs in the caller, so PAGODA_CHECK),
// then run the selected kernel. Only the scalar reference exists so far.
#include "kernels/ops.h"

#include "base/check.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/quant.h"

namespace pagoda::kernels {
namespace {

void check_weight(const WeightView& w) {
  PAGODA_CHECK(can_dequantize(w.dtype));
  PAGODA_CHECK(w.rows >= 0 && w.cols >= 0);
  auto row_bytes = tensor::row_size_bytes(w.dtype, static_cast<uint64_t>(w.cols));
  PAGODA_CHECK(row_bytes.ok() && *row_bytes == w.row_bytes);
  PAGODA_CHECK(w.data != nullptr || w.rows == 0);
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t m, float* y, const float* bias) {
  check_weight(w);
  PAGODA_CHECK(m >= 0);
  cpu::reference::matmul(w, x, m, y, bias);
}

void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out) {
  check_weight(table);
  PAGODA_CHECK(n >= 0);
  for (int64_t i = 0; i < n; ++i)
    PAGODA_CHECK(ids[i] >= 0 && ids[i] < table.rows);
  cpu::reference::get_rows(table, ids, n, out);
}

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  PAGODA_CHECK(rows >= 0 && dim > 0);
  cpu::reference::rms_norm(x, weight, rows, dim, eps, y);
}

void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
          const int32_t* positions, const RopeParams& params) {
  PAGODA_CHECK(num_tokens >= 0 && num_heads >= 0);
  PAGODA_CHECK(params.rot_dims > 0 && params.rot_dims % 2 == 0 && params.rot_dims <= head_dim);
  PAGODA_CHECK(params.freq_factors.empty() ||
               params.freq_factors.size() == static_cast<size_t>(params.rot_dims / 2));
  cpu::reference::rope(x, num_tokens, num_heads, head_dim, positions, params);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  PAGODA_CHECK(n >= 0);
  cpu::reference::silu_mul(gate, up, n, out);
}

void softmax(float* x, int64_t rows, int64_t dim) {
  PAGODA_CHECK(rows >= 0 && dim >= 0);
  cpu::reference::softmax(x, rows, dim);
}

void add_inplace(float* y, const float* x, int64_t n) {
  PAGODA_CHECK(n >= 0);
  cpu::reference::add_inplace(y, x, n);
}

}  // namespace pagoda::kernels
