// Reference paged attention (the math in kernels/attention.h), one (token, query head) row at a
// time: scores over the sequence's KV blocks through the block table, softmax, probabilities
// rounded to the cache type, then the weighted sum of V. The float operations and their order
// are fixed here and reproduced by every SIMD path:
//   q'    = q rounded to the cache type
//   s_j   = dot8(q', K_j) * scale   (dot8: eight lanes, lane i takes d ≡ i mod 8 with fma, then
//                                    ((l0 + l2) + (l1 + l3)) + ((l4 + l6) + (l5 + l7)), then the
//                                    tail d in order with fma)
//   M     = max_j s_j;  e_j = softmax_exp(s_j - M)
//   L     = four double lanes (lane i takes j ≡ i mod 4), (l0 + l2) + (l1 + l3), then the tail
//   p'_j  = round_to_cache_type(e_j * float(1 / L))
//   out_d = fma over j in order: acc_d = fma(p'_j, V_jd, acc_d)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/cpu/softmax_exp.h"
#include "tensor/float16.h"

namespace pagoda::kernels::cpu::reference {
namespace {

// Element offset of (block, kv head, slot, 0) in the [num_blocks][n_kv_heads][block_size][head_dim]
// layout.
int64_t cache_offset(const KvLayerView& kv, int64_t block, int64_t kv_head, int64_t slot) {
  return ((block * kv.n_kv_heads + kv_head) * kv.block_size + slot) * kv.head_dim;
}

// Reads head_dim values at element offset `off` of a cache array as f32.
void load_vec(const KvLayerView& kv, const void* base, int64_t off, float* out) {
  if (kv.dtype == tensor::DType::kF32) {
    std::memcpy(out, static_cast<const float*>(base) + off, sizeof(float) * kv.head_dim);
  } else {
    const auto* p = static_cast<const uint16_t*>(base) + off;
    for (int32_t d = 0; d < kv.head_dim; ++d)
      out[d] = tensor::fp16_to_fp32(p[d]);
  }
}

void store_vec(const KvLayerView& kv, void* base, int64_t off, const float* in) {
  if (kv.dtype == tensor::DType::kF32) {
    std::memcpy(static_cast<float*>(base) + off, in, sizeof(float) * kv.head_dim);
  } else {
    auto* p = static_cast<uint16_t*>(base) + off;
    for (int32_t d = 0; d < kv.head_dim; ++d)
      p[d] = tensor::fp32_to_fp16(in[d]);
  }
}

int64_t physical_block(const KvLayerView& kv, std::span<const int32_t> block_table, int64_t pos) {
  const int64_t logical = pos / kv.block_size;
  PAGODA_CHECK(logical < static_cast<int64_t>(block_table.size()));
  const int64_t block = block_table[static_cast<size_t>(logical)];
  PAGODA_CHECK(block >= 0 && block < kv.num_blocks);
  return block;
}

float round_to_cache(const KvLayerView& kv, float x) {
  return kv.dtype == tensor::DType::kF16 ? tensor::fp16_to_fp32(tensor::fp32_to_fp16(x)) : x;
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
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    const int64_t block = physical_block(kv, block_table, positions[t]);
    const int64_t slot = positions[t] % kv.block_size;
    for (int64_t h = 0; h < kv.n_kv_heads; ++h) {
      const int64_t src = (t * kv.n_kv_heads + h) * kv.head_dim;
      const int64_t dst = cache_offset(kv, block, h, slot);
      store_vec(kv, kv.k, dst, k + src);
      store_vec(kv, kv.v, dst, v + src);
    }
  }
}

void attention_item(const AttentionItem& item, const KvLayerView& kv,
                    const AttentionParams& params) {
  const int64_t head_dim = kv.head_dim;
  const int64_t group = params.n_heads / kv.n_kv_heads;
  std::vector<float> qr(static_cast<size_t>(head_dim)), kv_row(static_cast<size_t>(head_dim));
  std::vector<float> acc(static_cast<size_t>(head_dim)), scores;
  for (int64_t t = 0; t < item.num_tokens; ++t) {
    const int64_t n = static_cast<int64_t>(item.positions[t]) + 1;
    scores.resize(static_cast<size_t>(n));
    for (int64_t g = 0; g < group; ++g) {
      const int64_t row = t * params.n_heads + item.kv_head * group + g;
      const float* q = item.q + row * head_dim;
      for (int64_t d = 0; d < head_dim; ++d)
        qr[static_cast<size_t>(d)] = round_to_cache(kv, q[d]);
      float max = -INFINITY;
      for (int64_t j = 0; j < n; ++j) {
        const int64_t block = physical_block(kv, item.block_table, j);
        load_vec(kv, kv.k, cache_offset(kv, block, item.kv_head, j % kv.block_size), kv_row.data());
        const float s = dot8(qr.data(), kv_row.data(), head_dim) * params.scale;
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
        load_vec(kv, kv.v, cache_offset(kv, block, item.kv_head, j % kv.block_size), kv_row.data());
        for (int64_t d = 0; d < head_dim; ++d)
          acc[static_cast<size_t>(d)] =
              std::fma(p, kv_row[static_cast<size_t>(d)], acc[static_cast<size_t>(d)]);
      }
      std::memcpy(item.out + row * head_dim, acc.data(), sizeof(float) * head_dim);
    }
  }
}

}  // namespace pagoda::kernels::cpu::reference
