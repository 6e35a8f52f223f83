// Per-head matrix products (kernels/ops.h head_matmul): each output row is an axpy of the head's
// weight rows, one per input value in order, so the loop over outputs has no reduction and
// vectorises as written; the order of the sum is fixed whatever the batch.
#include "kernels/cpu/reference/ops_ref.h"

namespace pagoda::kernels::cpu::reference {

void head_matmul(const float* w, int64_t h0, int64_t h1, int64_t in_dim, int64_t out_dim,
                 const float* x, HeadRows xs, int64_t num_tokens, float* y, HeadRows ys) {
  for (int64_t h = h0; h < h1; ++h) {
    const float* wh = w + h * in_dim * out_dim;
    for (int64_t t = 0; t < num_tokens; ++t) {
      const float* xr = x + t * xs.token_stride + h * xs.head_stride;
      float* __restrict yr = y + t * ys.token_stride + h * ys.head_stride;
      for (int64_t r = 0; r < out_dim; ++r)
        yr[r] = 0.0f;
      for (int64_t c = 0; c < in_dim; ++c) {
        const float a = xr[c];
        const float* __restrict wr = wh + c * out_dim;
        for (int64_t r = 0; r < out_dim; ++r)
          yr[r] += a * wr[r];
      }
    }
  }
}

}  // namespace pagoda::kernels::cpu::reference
