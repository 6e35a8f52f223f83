// Reference paged attention, flash style: for one query token and head, walk the sequence's
// KV blocks in order keeping a running max m, normaliser l and weighted sum acc (online
// softmax), rescaling l and acc whenever a block raises the max. Scores, exponentials and
// accumulators are double; K/V are read as f32 or widened from f16.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/reference/ops_ref.h"
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

void paged_attention(const float* q, int64_t num_tokens, const int32_t* positions,
                     const KvLayerView& kv, std::span<const int32_t> block_table,
                     const AttentionParams& params, float* out) {
  const int64_t n_heads = params.n_heads;
  const int64_t head_dim = kv.head_dim;
  const int64_t group = n_heads / kv.n_kv_heads;  // query heads per KV head
  const int64_t num_items = num_tokens * n_heads;
  int64_t work = 0;  // ~ multiply-adds, to decide whether threads pay off
  for (int64_t t = 0; t < num_tokens; ++t)
    work += (positions[t] + 1) * n_heads * head_dim;
#pragma omp parallel if (num_items > 1 && work >= (1 << 17))
  {
    std::vector<float> kbuf(static_cast<size_t>(head_dim));
    std::vector<float> vbuf(static_cast<size_t>(head_dim));
    std::vector<double> acc(static_cast<size_t>(head_dim));
    std::vector<double> scores(static_cast<size_t>(kv.block_size));
#pragma omp for schedule(static)
    for (int64_t item = 0; item < num_items; ++item) {
      const int64_t t = item / n_heads;
      const int64_t h = item % n_heads;
      const int64_t kv_head = h / group;
      const float* qv = q + item * head_dim;
      const int64_t context_len = static_cast<int64_t>(positions[t]) + 1;
      double running_max = -std::numeric_limits<double>::infinity();
      double norm = 0;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t start = 0; start < context_len; start += kv.block_size) {
        const int64_t block = physical_block(kv, block_table, start);
        const int64_t count = std::min<int64_t>(kv.block_size, context_len - start);
        double block_max = -std::numeric_limits<double>::infinity();
        for (int64_t s = 0; s < count; ++s) {
          load_vec(kv, kv.k, cache_offset(kv, block, kv_head, s), kbuf.data());
          double dot = 0;
          for (int64_t d = 0; d < head_dim; ++d) {
            dot += static_cast<double>(qv[d]) * static_cast<double>(kbuf[d]);
          }
          scores[s] = dot * params.scale;
          block_max = std::max(block_max, scores[s]);
        }
        const double new_max = std::max(running_max, block_max);
        const double rescale = std::exp(running_max - new_max);  // 0 on the first block
        norm *= rescale;
        for (double& a : acc)
          a *= rescale;
        for (int64_t s = 0; s < count; ++s) {
          const double p = std::exp(scores[s] - new_max);
          norm += p;
          load_vec(kv, kv.v, cache_offset(kv, block, kv_head, s), vbuf.data());
          for (int64_t d = 0; d < head_dim; ++d)
            acc[d] += p * static_cast<double>(vbuf[d]);
        }
        running_max = new_max;
      }
      float* o = out + item * head_dim;
      for (int64_t d = 0; d < head_dim; ++d)
        o[d] = static_cast<float>(acc[d] / norm);
    }
  }
}

}  // namespace pagoda::kernels::cpu::reference
