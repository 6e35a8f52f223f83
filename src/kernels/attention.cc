// Attention fronts: check the KV layout, head mapping and positions, then split the work into
// (sequence, KV head, token tile) items run by one OpenMP loop on the active ISA's kernel (on the
// caller's team inside kernels::run_in_team, team.h).
#include "kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/isa.h"
#include "kernels/team_op.h"

namespace pagoda::kernels {
namespace {

constexpr int64_t kTokensPerItem = 8;           // query tokens per work item
constexpr int64_t kMinWorkPerThread = 1 << 15;  // multiply-adds per extra thread

void check_layout(const KvLayerView& kv) {
  PAGODA_CHECK(kv_row_bytes(kv.dtype, kv.head_dim).ok());  // dtype and head_dim fit together
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

Result<uint64_t> kv_row_bytes(tensor::DType dtype, int64_t head_dim) {
  if (head_dim <= 0 || head_dim > (int64_t{1} << 20)) {
    return invalid_argument("head_dim {} is out of range [1, 2^20]", head_dim);
  }
  const auto n = static_cast<uint64_t>(head_dim);
  switch (dtype) {
    case tensor::DType::kF32:
      return 4 * n;
    case tensor::DType::kF16:
    case tensor::DType::kBF16:
      return 2 * n;
    case tensor::DType::kQ8_0:
      if (n % 32 != 0) {
        return invalid_argument(
            "kv_cache_dtype q8_0 needs head_dim to be a multiple of 32 (its block size); this "
            "model's head_dim is {}",
            head_dim);
      }
      return n / 32 * 34;
    default:
      return unimplemented("KV cache dtype {} is not supported (f32, f16, bf16, q8_0)",
                           tensor::dtype_name(dtype));
  }
}

void kv_cache_write(const KvLayerView& kv, std::span<const int32_t> block_table,
                    const int32_t* positions, int64_t num_tokens, const float* k, const float* v) {
  check_layout(kv);
  PAGODA_CHECK(num_tokens >= 0 && (v != nullptr || kv.v == kv.k));
  check_positions(kv, block_table, positions, num_tokens);
  const int64_t row = static_cast<int64_t>(kv.n_kv_heads) * kv.head_dim;
  const auto f16_row = cpu::active_kernels().fp32_to_f16_row;
  team_detail::for_rows(num_tokens, num_tokens * row * 4, kMinWorkPerThread,
                        team_detail::available_threads(), [&](int64_t t0, int64_t t1) {
                          cpu::reference::kv_cache_write(
                              kv, block_table, positions + t0, t1 - t0, k + t0 * row,
                              v != nullptr ? v + t0 * row : nullptr, f16_row);
                        });
}

void paged_attention(const float* q, int64_t num_tokens, const int32_t* positions,
                     const KvLayerView& kv, std::span<const int32_t> block_table,
                     const AttentionParams& params, float* out) {
  AttentionSequence seq;
  seq.q = q;
  seq.out = out;
  seq.positions = positions;
  seq.num_tokens = num_tokens;
  seq.block_table = block_table;
  paged_attention_batch(std::span<const AttentionSequence>(&seq, 1), kv, params);
}

void paged_attention_batch(std::span<const AttentionSequence> sequences, const KvLayerView& kv,
                           const AttentionParams& params) {
  check_layout(kv);
  PAGODA_CHECK(params.n_heads > 0 && params.n_heads % kv.n_kv_heads == 0);
  PAGODA_CHECK(params.window >= 0 && params.softcap >= 0);
  thread_local std::vector<cpu::AttentionItem> items;
  items.clear();
  int64_t work = 0;  // ~ multiply-adds
  int32_t max_pos = 0;
  const int64_t row = static_cast<int64_t>(params.n_heads) * kv.head_dim;
  for (const AttentionSequence& s : sequences) {
    PAGODA_CHECK(s.num_tokens >= 0);
    check_positions(kv, s.block_table, s.positions, s.num_tokens);
    for (int64_t t0 = 0; t0 < s.num_tokens; t0 += kTokensPerItem) {
      const int64_t nt = std::min(kTokensPerItem, s.num_tokens - t0);
      for (int32_t h = 0; h < kv.n_kv_heads; ++h) {
        cpu::AttentionItem it;
        it.q = s.q + t0 * row;
        it.out = s.out + t0 * row;
        it.positions = s.positions + t0;
        it.num_tokens = nt;
        it.kv_head = h;
        it.block_table = s.block_table;
        items.push_back(it);
      }
      for (int64_t t = t0; t < t0 + nt; ++t) {
        work += (static_cast<int64_t>(s.positions[t]) + 1) * 2 * row;
        max_pos = std::max(max_pos, s.positions[t]);
      }
    }
  }
  if (items.empty()) return;
  const cpu::CpuKernels& k = cpu::active_kernels();
  // The SIMD paths know no windows: those run on the reference kernel. A window no query
  // reaches past (every position < window) changes nothing, and every path gives the
  // reference's bits, so such calls stay on the SIMD path.
  const bool plain = !(params.window > 0 && max_pos >= params.window);
  auto* fn =
      k.attention_item != nullptr && plain ? k.attention_item : &cpu::reference::attention_item;
  const int nth = static_cast<int>(
      std::min<int64_t>({team_detail::available_threads(), static_cast<int64_t>(items.size()),
                         std::max<int64_t>(1, work / kMinWorkPerThread)}));
  const auto n = static_cast<int64_t>(items.size());
  const cpu::AttentionItem* data = items.data();
  if (nth == 1) {
    team_detail::run_first([&] {
      for (int64_t i = 0; i < n; ++i)
        fn(data[i], kv, params);
    });
    return;
  }
  // Every thread of a team built the same items (in its own thread_local list).
  team_detail::run_op(nth, [&](team_detail::OpThread& t) {
    t.sync();
#pragma omp for schedule(dynamic, 1) nowait
    for (int64_t i = 0; i < n; ++i)
      fn(data[i], kv, params);
    t.wrote_all();
  });
}

}  // namespace pagoda::kernels
