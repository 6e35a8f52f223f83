// Reference paged attention (the math in kernels/attention.h), one (token, query head) row at a
// time: scores over the sequence's KV blocks through the block table, softmax, probabilities
// rounded to the cache type, then the weighted sum of V. The float operations and their order
// are fixed here and reproduced by every SIMD path:
//   f32/f16/bf16 caches:
//     q'  = q rounded to the cache type
//     s_j = dot8(q', K_j) * scale   (dot8: eight lanes, lane i takes d ≡ i mod 8 with fma, then
//                                    ((l0 + l2) + (l1 + l3)) + ((l4 + l6) + (l5 + l7)), then the
//                                    tail d in order with fma)
//   q8_0 caches:
//     q'  = q quantised to Q8_0 (an activation row, act_layout.h)
//     s_j = vec_dot(Q8_0: K_j, q') * scale  (vec_dot_ref.cc: acc = fma(float(isum_b), dk_b * dq_b,
//                                             acc) over the 32-blocks b in order)
//   M     = max_j s_j;  e_j = softmax_exp(s_j - M)
//   L     = four double lanes (lane i takes j ≡ i mod 4), (l0 + l2) + (l1 + l3), then the tail
//   p'_j  = round_to_cache_type(e_j * float(1 / L))   (f16, bf16; f32 and q8_0 keep the float)
//   out_d = fma over j in order: acc_d = fma(p'_j, V_jd, acc_d), V_jd read as float (q8_0:
//           float(q) * d, ggml's dequantize_row_q8_0)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/reference/quant_ref.h"
#include "kernels/cpu/softmax_exp.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {
namespace {

// Address of row (block, kv head, slot) in the [num_blocks][n_kv_heads][block_size][row] layout.
size_t row_offset(const KvLayerView& kv, size_t row_bytes, int64_t block, int64_t kv_head,
                  int64_t slot) {
  return static_cast<size_t>((block * kv.n_kv_heads + kv_head) * kv.block_size + slot) * row_bytes;
}

size_t row_bytes_of(const KvLayerView& kv) {
  auto r = kv_row_bytes(kv.dtype, kv.head_dim);
  PAGODA_CHECK(r.ok());
  return static_cast<size_t>(*r);
}

// Reads one cached row (head_dim values) as f32.
void load_row(const KvLayerView& kv, const uint8_t* row, float* out) {
  switch (kv.dtype) {
    case tensor::DType::kF32:
      dequantize_row_f32(row, out, kv.head_dim);
      break;
    case tensor::DType::kF16:
      dequantize_row_f16(row, out, kv.head_dim);
      break;
    case tensor::DType::kBF16:
      dequantize_row_bf16(row, out, kv.head_dim);
      break;
    default:
      dequantize_row_q8_0(row, out, kv.head_dim);
      break;
  }
}

void store_row(const KvLayerView& kv, uint8_t* row, const float* in,
               void (*f16_row)(const float*, void*, int64_t)) {
  switch (kv.dtype) {
    case tensor::DType::kF32:
      quantize_row_f32(in, row, kv.head_dim);
      break;
    case tensor::DType::kF16:
      f16_row(in, row, kv.head_dim);
      break;
    case tensor::DType::kBF16:
      quantize_row_bf16(in, row, kv.head_dim);
      break;
    default:
      quantize_row_q8_0(in, row, kv.head_dim);
      break;
  }
}

int64_t physical_block(const KvLayerView& kv, std::span<const int32_t> block_table, int64_t pos) {
  const int64_t logical = pos / kv.block_size;
  PAGODA_CHECK(logical < static_cast<int64_t>(block_table.size()));
  const int64_t block = block_table[static_cast<size_t>(logical)];
  PAGODA_CHECK(block >= 0 && block < kv.num_blocks);
  return block;
}

// x rounded to the cache type (f16, bf16); f32 and q8_0 keep it.
float round_to_cache(const KvLayerView& kv, float x) {
  if (kv.dtype == tensor::DType::kF16) return tensor::fp16_to_fp32(tensor::fp32_to_fp16(x));
  if (kv.dtype == tensor::DType::kBF16) return tensor::bf16_to_fp32(tensor::fp32_to_bf16(x));
  return x;
}

float dot8(const float* a, const float* b, int64_t n) {
  float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  const int64_t main = n - n % 8;
  for (int64_t k = 0; k < main; ++k)
    lane[k % 8] = std::fma(a[k], b[k], lane[k % 8]);
  float s =
      ((lane[0] + lane[2]) + (lane[1] + lane[3])) + ((lane[4] + lane[6]) + (lane[5] + lane[7]));
  for (int64_t k = main; k < n; ++k)
    s = std::fma(a[k], b[k], s);
  return s;
}

}  // namespace

void kv_cache_write(const KvLayerView& kv, std::span<const int32_t> block_table,
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v,
                    void (*f16_row)(const float* src, void* dst, int64_t n)) {
  const size_t row_bytes = row_bytes_of(kv);
  if (f16_row == nullptr) f16_row = &quantize_row_f16;
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t block = physical_block(kv, block_table, positions[t]);
    const int64_t slot = positions[t] % kv.block_size;
    for (int64_t h = 0; h < kv.n_kv_heads; ++h) {
      const int64_t src = (t * kv.n_kv_heads + h) * kv.head_dim;
      const size_t dst = row_offset(kv, row_bytes, block, h, slot);
      store_row(kv, static_cast<uint8_t*>(kv.k) + dst, k + src, f16_row);
      store_row(kv, static_cast<uint8_t*>(kv.v) + dst, v + src, f16_row);
    }
  }
}

void attention_item(const AttentionItem& item, const KvLayerView& kv,
                    const AttentionParams& params) {
  const int64_t head_dim = kv.head_dim;
  const int64_t group = params.n_heads / kv.n_kv_heads;
  const size_t row_bytes = row_bytes_of(kv);
  const bool q8 = kv.dtype == tensor::DType::kQ8_0;
  const auto* kbase = static_cast<const uint8_t*>(kv.k);
  const auto* vbase = static_cast<const uint8_t*>(kv.v);
  // q8_0: q' as a Q8_0 activation row (float storage keeps its d[] array aligned).
  const ActLayout ql = q8 ? act_layout(ActType::kQ8_0, head_dim) : ActLayout{};
  std::vector<float> q8_row(q8 ? ql.row_bytes / sizeof(float) : 0);
  auto* q8_bytes = reinterpret_cast<uint8_t*>(q8_row.data());
  std::vector<float> qr(static_cast<size_t>(head_dim)), kv_row(static_cast<size_t>(head_dim));
  std::vector<float> acc(static_cast<size_t>(head_dim)), scores;
  for (int64_t t = 0; t < item.num_tokens; ++t) {
    const int64_t n = static_cast<int64_t>(item.positions[t]) + 1;
    scores.resize(static_cast<size_t>(n));
    for (int64_t g = 0; g < group; ++g) {
      const int64_t row = t * params.n_heads + item.kv_head * group + g;
      const float* q = item.q + row * head_dim;
      if (q8) {
        quantize_act_row(ql, q, q8_bytes);
      } else {
        for (int64_t d = 0; d < head_dim; ++d)
          qr[static_cast<size_t>(d)] = round_to_cache(kv, q[d]);
      }
      float max = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t block = physical_block(kv, item.block_table, j);
        const uint8_t* krow =
            kbase + row_offset(kv, row_bytes, block, item.kv_head, j % kv.block_size);
        float dot;
        if (q8) {
          dot = vec_dot(tensor::DType::kQ8_0, krow, act_row(ql, q8_bytes), head_dim);
        } else {
          load_row(kv, krow, kv_row.data());
          dot = dot8(qr.data(), kv_row.data(), head_dim);
        }
        const float s = dot * params.scale;
        scores[static_cast<size_t>(j)] = s;
        max = std::max(max, s);
      }
      double lane[4] = {0, 0, 0, 0};
      const int64_t main = n - n % 4;
      for (int64_t j = 0; j < n; ++j) {
        const float e = softmax_exp(scores[static_cast<size_t>(j)] - max);
        scores[static_cast<size_t>(j)] = e;
        if (j < main) lane[j % 4] += e;
      }
      double sum = (lane[0] + lane[2]) + (lane[1] + lane[3]);
      for (int64_t j = main; j < n; ++j)
        sum += scores[static_cast<size_t>(j)];
      const auto inv = static_cast<float>(1.0 / sum);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        const float p = round_to_cache(kv, scores[static_cast<size_t>(j)] * inv);
        const int64_t block = physical_block(kv, item.block_table, j);
        load_row(kv, vbase + row_offset(kv, row_bytes, block, item.kv_head, j % kv.block_size),
                 kv_row.data());
        for (int64_t d = 0; d < head_dim; ++d)
          acc[static_cast<size_t>(d)] =
              std::fma(p, kv_row[static_cast<size_t>(d)], acc[static_cast<size_t>(d)]);
      }
      std::memcpy(item.out + row * head_dim, acc.data(), sizeof(float) * head_dim);
    }
  }
}

}  // namespace pagoda::kernels::cpu::reference
