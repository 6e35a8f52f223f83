// Reference conversion of activation rows to their vec-dot type (act_layout.h), bit-exact with
// ggml's quantize_row_q8_0_ref, quantize_row_q8_1_ref, quantize_row_q8_K_ref and its f16/bf16
// round-to-nearest-even.
#include <cmath>
#include <cstring>

#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/reference/quant_helpers.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {
namespace {

using tensor::fp16_to_fp32;
using tensor::fp32_to_fp16;

// Q8_0 and Q8_1 share the quantisation; Q8_1 also stores f16(Σqs · d) with the unrounded d.
void quantize_q8_01(const ActLayout& l, const float* x, uint8_t* dst) {
  auto* qs = reinterpret_cast<int8_t*>(dst);
  auto* d_out = reinterpret_cast<float*>(dst + l.d_offset);
  auto* s_out = reinterpret_cast<float*>(dst + l.s_offset);
  auto* sums = reinterpret_cast<int16_t*>(dst + l.sum_offset);
  for (int64_t b = 0; b < l.n / 32; ++b) {
    const float* xb = x + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float a = std::fabs(xb[j]);
      amax = amax > a ? amax : a;
    }
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = round_clamped(xb[j] * id, -127, 127);
      qs[b * 32 + j] = static_cast<int8_t>(q);
      sum += q;
    }
    d_out[b] = fp16_to_fp32(fp32_to_fp16(d));
    s_out[b] =
        l.type == ActType::kQ8_1 ? fp16_to_fp32(fp32_to_fp16(static_cast<float>(sum) * d)) : 0.0f;
    sums[b] = static_cast<int16_t>(sum);
  }
}

void quantize_q8_k(const ActLayout& l, const float* x, uint8_t* dst) {
  auto* qs = reinterpret_cast<int8_t*>(dst);
  auto* d_out = reinterpret_cast<float*>(dst + l.d_offset);
  auto* bsums = reinterpret_cast<int16_t*>(dst + l.sum_offset);
  for (int64_t b = 0; b < l.n / 256; ++b) {
    const float* xb = x + b * 256;
    int8_t* q = qs + b * 256;
    float max = 0, amax = 0;
    for (int j = 0; j < 256; ++j) {
      const float ax = std::fabs(xb[j]);
      if (ax > amax) {
        amax = ax;
        max = xb[j];
      }
    }
    if (amax == 0.0f) {
      d_out[b] = 0;
      std::memset(q, 0, 256);
      for (int j = 0; j < 16; ++j)
        bsums[b * 16 + j] = 0;
      continue;
    }
    const float iscale = -127.f / max;
    for (int j = 0; j < 256; ++j) {
      const int v = nearest_int(iscale * xb[j]);
      q[j] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i)
        sum += q[j * 16 + i];
      bsums[b * 16 + j] = static_cast<int16_t>(sum);
    }
    d_out[b] = 1 / iscale;
  }
}

}  // namespace

void quantize_act_row(const ActLayout& l, const float* x, uint8_t* dst) {
  auto* vals = reinterpret_cast<float*>(dst);
  switch (l.type) {
    case ActType::kF32:
      std::memcpy(vals, x, static_cast<size_t>(l.n) * sizeof(float));
      break;
    case ActType::kF16:
      for (int64_t i = 0; i < l.n; ++i)
        vals[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
      break;
    case ActType::kBF16:
      for (int64_t i = 0; i < l.n; ++i)
        vals[i] = tensor::bf16_to_fp32(tensor::fp32_to_bf16(x[i]));
      break;
    case ActType::kQ8_0:
    case ActType::kQ8_1:
      quantize_q8_01(l, x, dst);
      break;
    case ActType::kQ8_K:
      quantize_q8_k(l, x, dst);
      break;
  }
}

void quantize_acts(const ActLayout& l, const float* x, int64_t m, uint8_t* dst) {
  for (int64_t i = 0; i < m; ++i)
    quantize_act_row(l, x + i * l.n, dst + static_cast<size_t>(i) * l.row_bytes);
}

}  // namespace pagoda::kernels::cpu::reference
