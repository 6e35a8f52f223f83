// Reference paged attention (the math in kernels/attention.h), one (token, query head) row at a
// time over the sequence's KV blocks through the block table, with the exact softmax (all scores,
// then the probabilities normalised) or, with AttentionParams::online_softmax, flash-style: one
// walk with a running max, the sum and the output rescaled when it grows. The float operations
// and their order are fixed here and reproduced by every SIMD path:
//   f32/f16/bf16 caches:
//     q'  = q rounded to the cache type
//     s_j = dot8(q', K_j) * scale   (dot8: eight lanes, lane i takes d ≡ i mod 8 with fma, then
//                                    ((l0 + l2) + (l1 + l3)) + ((l4 + l6) + (l5 + l7)), then the
//                                    tail d in order with fma)
//   q8_0 caches:
//     q'  = q quantised to Q8_0 (an activation row, act_layout.h)
//     s_j = vec_dot(Q8_0: K_j, q') * scale  (vec_dot_ref.cc: acc = fma(float(isum_b), dk_b * dq_b,
//                                             acc) over the 32-blocks b in order)
//   Σe    = four double lanes (key i of the keys summed into lane i mod 4), (l0 + l2) + (l1 +
//           l3), then the tail keys in order
//   V_jd is read as float (q8_0: float(q) * d, ggml's dequantize_row_q8_0); round() rounds to the
//   cache type (f16, bf16; f32 and q8_0 keep the float).
//   (a sliding window starts the keys at j0 = max(0, p - window + 1), the online walk's first
//   block at j0; a softcap c makes each s_j c * tanh(s_j / c), in float)
//   exact:  M = max_j s_j;  e_j = softmax_exp(s_j - M);  L = Σe over all keys
//           p'_j = round(e_j * float(1 / L));  out_d = fma over j in order: acc_d = fma(p'_j,
//           V_jd, acc_d)
//   online: from M = -inf, L = 0 (double), acc_d = 0, per KV block (its keys j in order):
//             M' = max(M, s_j over the block) (in order);  a = softmax_exp(M - M')
//             e_j = softmax_exp(s_j - M');  L = L * double(a) + Σe over the block's keys
//             acc_d = acc_d * a, then acc_d = fma(round(e_j), V_jd, acc_d) over the block's j
//             M = M'
//           out_d = acc_d * float(1 / L)
#include <algorithm>
#include <cmath>
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

// Σ x[i] for i < n as four double lanes (i mod 4), (l0 + l2) + (l1 + l3), then the tail in order.
double lane_sum(const float* x, int64_t n) {
  double lane[4] = {0, 0, 0, 0};
  const int64_t main = n - n % 4;
  for (int64_t i = 0; i < main; ++i)
    lane[i % 4] += x[i];
  double sum = (lane[0] + lane[2]) + (lane[1] + lane[3]);
  for (int64_t i = main; i < n; ++i)
    sum += x[i];
  return sum;
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
      if (kv.v != kv.k) store_row(kv, static_cast<uint8_t*>(kv.v) + dst, v + src, f16_row);
    }
  }
}

void attention_item(const AttentionItem& item, const KvLayerView& kv,
                    const AttentionParams& params) {
  const int64_t head_dim = kv.head_dim;
  const int64_t group = params.n_heads / kv.n_kv_heads;
  const int64_t bs = kv.block_size;
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
  // The offset of key j's row in a cache array.
  const auto row_of = [&](int64_t j) {
    return row_offset(kv, row_bytes, physical_block(kv, item.block_table, j), item.kv_head, j % bs);
  };
  const auto score = [&](int64_t j) {
    float dot;
    if (q8) {
      dot = vec_dot(tensor::DType::kQ8_0, kbase + row_of(j), act_row(ql, q8_bytes), head_dim);
    } else {
      load_row(kv, kbase + row_of(j), kv_row.data());
      dot = dot8(qr.data(), kv_row.data(), head_dim);
    }
    const float s = dot * params.scale;
    return params.softcap > 0 ? params.softcap * std::tanh(s / params.softcap) : s;
  };
  // acc_d = fma(round(p[i]), V_{j0 + i, d}, acc_d) for i < count in order.
  const auto add_values = [&](int64_t j0, int64_t count, const float* p) {
    for (int64_t i = 0; i < count; ++i) {
      const float pr = round_to_cache(kv, p[i]);
      load_row(kv, vbase + row_of(j0 + i), kv_row.data());
      for (int64_t d = 0; d < head_dim; ++d)
        acc[static_cast<size_t>(d)] =
            std::fma(pr, kv_row[static_cast<size_t>(d)], acc[static_cast<size_t>(d)]);
    }
  };
  for (int64_t t = 0; t < item.num_tokens; ++t) {
    const int64_t n = static_cast<int64_t>(item.positions[t]) + 1;
    // Keys [j0, n): the whole causal context, or the sliding window's last `window` positions.
    const int64_t j0 = params.window > 0 ? std::max<int64_t>(0, n - params.window) : 0;
    scores.resize(static_cast<size_t>(params.online_softmax ? bs : n - j0));
    for (int64_t g = 0; g < group; ++g) {
      const int64_t row = t * params.n_heads + item.kv_head * group + g;
      const float* q = item.q + row * head_dim;
      if (q8) {
        quantize_act_row(ql, q, q8_bytes);
      } else {
        for (int64_t d = 0; d < head_dim; ++d)
          qr[static_cast<size_t>(d)] = round_to_cache(kv, q[d]);
      }
      std::fill(acc.begin(), acc.end(), 0.0f);
      float inv = 1;
      if (!params.online_softmax) {
        float max = -INFINITY;
        for (int64_t j = j0; j < n; ++j) {
          scores[static_cast<size_t>(j - j0)] = score(j);
          max = std::max(max, scores[static_cast<size_t>(j - j0)]);
        }
        for (float& x : scores)
          x = softmax_exp(x - max);
        const auto scale = static_cast<float>(1.0 / lane_sum(scores.data(), n - j0));
        for (float& x : scores)
          x = x * scale;
        add_values(j0, n - j0, scores.data());
      } else {
        float max = -INFINITY;
        double sum = 0;
        // Block by block from j0 (the first step ends at j0's block boundary).
        for (int64_t start = j0; start < n; start = (start / bs + 1) * bs) {
          const int64_t count = std::min((start / bs + 1) * bs, n) - start;
          float block_max = max;
          for (int64_t i = 0; i < count; ++i) {
            scores[static_cast<size_t>(i)] = score(start + i);
            block_max = std::max(block_max, scores[static_cast<size_t>(i)]);
          }
          const float a = softmax_exp(max - block_max);
          for (int64_t i = 0; i < count; ++i)
            scores[static_cast<size_t>(i)] =
                softmax_exp(scores[static_cast<size_t>(i)] - block_max);
          sum = sum * static_cast<double>(a) + lane_sum(scores.data(), count);
          for (float& x : acc)
            x = x * a;
          add_values(start, count, scores.data());
          max = block_max;
        }
        inv = static_cast<float>(1.0 / sum);
      }
      for (int64_t d = 0; d < head_dim; ++d)
        item.out[row * head_dim + d] = acc[static_cast<size_t>(d)] * inv;
    }
  }
}

}  // namespace pagoda::kernels::cpu::reference
