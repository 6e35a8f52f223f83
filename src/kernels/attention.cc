// Attention fronts: check the KV layout and head mapping, then run the selected kernel.
#include "kernels/attention.h"

#include "base/check.h"
#include "kernels/cpu/reference/ops_ref.h"

namespace pagoda::kernels {
namespace {

void check_layout(const KvLayerView& kv) {
  PAGODA_CHECK(kv.dtype == tensor::DType::kF32 || kv.dtype == tensor::DType::kF16);
  PAGODA_CHECK(kv.block_size > 0 && kv.n_kv_heads > 0 && kv.head_dim > 0 && kv.num_blocks >= 0);
  PAGODA_CHECK(kv.k != nullptr && kv.v != nullptr);
}

// Every position is >= 0 and its logical block is covered by the table (block ids themselves
// are checked by the kernel as it reads them).
void check_positions(const KvLayerView& kv, std::span<const int32_t> block_table,
                     const int32_t* positions, int64_t num_tokens) {
  for (int64_t t = 0; t < num_tokens; ++t) {
    PAGODA_CHECK(positions[t] >= 0);
    PAGODA_CHECK(positions[t] / kv.block_size < static_cast<int64_t>(block_table.size()));
  }
}

}  // namespace

void kv_cache_write(const KvLayerView& kv, std::span<const int32_t> block_table,
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v) {
  check_layout(kv);
  PAGODA_CHECK(num_tokens >= 0);
  check_positions(kv, block_table, positions, num_tokens);
  cpu::reference::kv_cache_write(kv, block_table, positions, num_tokens, k, v);
}

void paged_attention(const float* q, int64_t num_tokens, const int32_t* positions,
                     const KvLayerView& kv, std::span<const int32_t> block_table,
                     const AttentionParams& params, float* out) {
  check_layout(kv);
  PAGODA_CHECK(num_tokens >= 0);
  PAGODA_CHECK(params.n_heads > 0 && params.n_heads % kv.n_kv_heads == 0);
  check_positions(kv, block_table, positions, num_tokens);
  cpu::reference::paged_attention(q, num_tokens, positions, kv, block_table, params, out);
}

}  // namespace pagoda::kernels
