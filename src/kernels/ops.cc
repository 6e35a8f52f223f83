// Op fronts: check each op's shape contract (violations are bugs in the caller, so PAGODA_CHECK),
// then run the active ISA's kernel (kernels/isa.h), splitting the work across OpenMP threads.
//
// Threading: each op that is worth it opens one OpenMP parallel region (matmul: convert the
// activations, barrier, build the ISA's grouped form of them if it has one (another barrier),
// then for decode each thread computes a contiguous slice of most output
// rows and the threads share the rest in small pieces; for several tokens they take 64-row chunks
// in turn; a matmul_group does that for several weights sharing one input). Threads never split a
// dot product, so results do not depend on the thread count. Small ops (norms, elementwise, rope)
// run on the calling thread: at decode sizes a fork/join would cost more than they do. One region
// per op rather than one per forward pass: at ~1-2 us per fork/join on a warm, spinning OpenMP
// pool, the ~5 regions per layer cost well under 2% of a decode step (see bench/kernels threading
// benchmark), and no kernel needs to be written for a caller's thread slice. silu_mul (an exp per
// element) is split too once a batch makes it worth a fork.
#include "kernels/ops.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <utility>

#include "base/check.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/isa.h"
#include "kernels/quant.h"

namespace pagoda::kernels {
namespace {

// Multiply-adds below which an extra thread costs more than it saves (fork/join is ~1-5 us).
constexpr int64_t kMinWorkPerThread = 1 << 16;

// A 64-byte aligned scratch buffer per calling thread, grown on demand and kept.
uint8_t* act_buffer(size_t bytes) {
  thread_local std::unique_ptr<uint8_t[]> storage;
  thread_local size_t capacity = 0;
  if (bytes + 64 > capacity) {
    capacity = std::max(bytes + 64, capacity * 2);
    storage = std::make_unique<uint8_t[]>(capacity);
  }
  auto p = reinterpret_cast<uintptr_t>(storage.get());
  return reinterpret_cast<uint8_t*>((p + 63) & ~static_cast<uintptr_t>(63));
}

int threads_for(int64_t work) {
  const int64_t useful = std::max<int64_t>(1, work / kMinWorkPerThread);
  return static_cast<int>(std::min<int64_t>(num_threads(), useful));
}

void check_weight(const WeightView& w) {
  PAGODA_CHECK(can_dequantize(w.dtype));
  PAGODA_CHECK(w.rows >= 0 && w.cols >= 0);
  auto row_bytes = tensor::row_size_bytes(w.dtype, static_cast<uint64_t>(w.cols));
  PAGODA_CHECK(row_bytes.ok() && *row_bytes == w.row_bytes);
  PAGODA_CHECK(w.data != nullptr || w.rows == 0);
}

}  // namespace

void matmul(const WeightView& w, const float* x, int64_t m, float* y, const float* bias) {
  const MatmulJob job{&w, y, bias};
  matmul_group(std::span<const MatmulJob>(&job, 1), x, m);
}

size_t packed_size(const WeightView& w) {
  check_weight(w);
  // PAGODA_PACK=0 turns packing off (A/B benchmarks of the two layouts).
  static const bool enabled = [] {
    const char* env = std::getenv("PAGODA_PACK");
    return env == nullptr || std::string_view(env) != "0";
  }();
  if (!enabled || !cpu::active_kernels().reads_packed) return 0;
  return cpu::packed_bytes(w);
}

void pack_weight(const WeightView& w, uint8_t* dst) {
  PAGODA_CHECK(packed_size(w) > 0 && dst != nullptr);
  cpu::pack_weight(w, dst);
}

std::vector<uint8_t> pack_weight(const WeightView& w) {
  std::vector<uint8_t> out(packed_size(w));
  if (!out.empty()) pack_weight(w, out.data());
  return out;
}

// Batches of at least this many tokens split rows dynamically, in chunks of kDynamicRows
// (a multiple of the kernels' 8-row tile: 8 tiles keep the packed next-tile prefetch useful).
constexpr int64_t kDynamicMinTokens = 4;
constexpr int64_t kDynamicRows = 64;
// Decode (fewer tokens): each thread first streams its contiguous share of kDecodeStaticEighths/8
// of a job's rows, then the threads share the rest in shrinking pieces (guided: a thread takes
// 1/(2 x threads) of what is left, in whole tile pairs, at least one pair), so a thread that got
// less of the memory bandwidth (or of its core) does less of the tail instead of keeping the
// other waiting at the end of the region, and the last pieces are one pair each. Measured on the
// Zen 3 VM, TinyLlama Q4_0 decode, per-step alternation in one process: 7/8 static + 32-row tail
// 1.8-3.7% faster per token than all static; 3/4 about the same as 7/8, 1/2 and 5/8 no gain. On
// the SPR VM (`pagoda bench`, 3 alternating rounds) guided pieces against fixed 32-row ones:
// Q4_0 88-89 -> 90-91% of the roofline, Q8_0 95 -> 96-98%, Q4_K_M 74-77 -> 76-79%; a 3/4 static
// share with them was no better, fixed 16-row pieces were worse.
constexpr int64_t kDecodeStaticEighths = 7;
constexpr int64_t kDecodeMinTailRows = 16;  // one tile pair (decode_pair's unit)

namespace {
// The next piece [first, first + count) of a job's decode tail [0, tail_rows) for one of n
// threads, or count 0 when none is left. `next`: the tail rows handed out so far.
std::pair<int64_t, int64_t> next_tail_piece(std::atomic<int64_t>& next, int64_t tail_rows, int n) {
  int64_t cur = next.load(std::memory_order_relaxed);
  for (;;) {
    const int64_t left = tail_rows - cur;
    if (left <= 0) return {cur, 0};
    const int64_t guided = left / (2 * n) / kDecodeMinTailRows * kDecodeMinTailRows;
    const int64_t take = std::min(left, std::max(kDecodeMinTailRows, guided));
    if (next.compare_exchange_weak(cur, cur + take, std::memory_order_relaxed)) return {cur, take};
  }
}
}  // namespace

void matmul_group(std::span<const MatmulJob> jobs, const float* x, int64_t m) {
  PAGODA_CHECK(m >= 0);
  if (jobs.empty() || m == 0) return;
  const int64_t cols = jobs[0].w->cols;
  constexpr size_t kMaxJobs = 8;
  PAGODA_CHECK(jobs.size() <= kMaxJobs);
  const cpu::CpuKernels& k = cpu::active_kernels();
  // Distinct activation layouts (Q4_K_M mixes Q4_K and Q6_K: both read Q8_K) and each job's.
  cpu::ActLayout layouts[kMaxJobs];
  size_t layout_offset[kMaxJobs];
  size_t grouped_bytes[kMaxJobs];
  size_t job_layout[kMaxJobs];
  cpu::MatmulRowsFn fns[kMaxJobs];
  size_t num_layouts = 0, bytes = 0;
  bool any_grouped = false;
  int64_t work = 0, rows_total = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const WeightView& w = *jobs[j].w;
    check_weight(w);
    PAGODA_CHECK(w.cols == cols && jobs[j].y != nullptr);
    const cpu::ActType type = cpu::act_type_for(w.dtype);
    size_t li = 0;
    while (li < num_layouts && layouts[li].type != type)
      ++li;
    if (li == num_layouts) {
      layouts[li] = cpu::act_layout(type, cols);
      grouped_bytes[li] = 0;
      ++num_layouts;
    }
    // The rows' grouped form, when the ISA has one that this job's kernel reads.
    if (k.group_acts_bytes != nullptr)
      grouped_bytes[li] = std::max(grouped_bytes[li], k.group_acts_bytes(w, layouts[li], m));
    job_layout[j] = li;
    fns[j] = k.matmul_rows(w.dtype);
    if (fns[j] == nullptr) fns[j] = &cpu::reference::matmul_rows;
    work += w.rows * std::max<int64_t>(cols, 1) * m;
    rows_total += w.rows;
  }
  for (size_t li = 0; li < num_layouts; ++li) {  // each layout's rows, then its grouped form
    layout_offset[li] = bytes;
    bytes += static_cast<size_t>(m) * layouts[li].row_bytes + grouped_bytes[li];
    layouts[li].grouped = grouped_bytes[li] > 0;
    any_grouped = any_grouped || layouts[li].grouped;
  }
  uint8_t* acts = act_buffer(bytes);
  const int nth = rows_total >= 16 ? threads_for(work) : 1;
  int64_t job_items[kMaxJobs];  // chunks of kDynamicRows rows per job (dynamic schedule)
  for (size_t j = 0; j < jobs.size(); ++j)
    job_items[j] = (jobs[j].w->rows + kDynamicRows - 1) / kDynamicRows;
  std::atomic<int64_t> next_item{0};
  std::atomic<int64_t> tail_next[kMaxJobs];
  for (auto& t : tail_next)
    t.store(0, std::memory_order_relaxed);
  const auto quantize = [&](int64_t m0, int64_t m1) {
    for (size_t li = 0; li < num_layouts; ++li) {
      const cpu::ActLayout& l = layouts[li];
      k.quantize_acts(l, x + m0 * cols, m1 - m0,
                      acts + layout_offset[li] + static_cast<size_t>(m0) * l.row_bytes);
    }
  };
  // Fewer rows than threads (decode): the calling thread, which has just written x and holds it
  // in its cache, converts it before the fork, so no thread waits for another's remote reads at
  // a barrier. Measured on the SPR VM, TinyLlama Q4_K_M decode: a worker took 2.9 us on average
  // to convert the one row while the caller waited 3.3 us at the barrier, in each of the step's
  // ~90 regions.
  const bool split_quantize = m >= nth;
  if (!split_quantize) quantize(0, m);
#pragma omp parallel num_threads(nth) if (nth > 1)
  {
    const int ith = omp_get_thread_num();
    const int n = omp_get_num_threads();
    if (split_quantize) {
      quantize(m * ith / n, m * (ith + 1) / n);
#pragma omp barrier
    }
    if (any_grouped) {
      for (size_t li = 0; li < num_layouts; ++li) {
        const cpu::ActLayout& l = layouts[li];
        if (!l.grouped) continue;
        const uint8_t* rows = acts + layout_offset[li];
        k.group_acts(l, rows, m, ith, n,
                     acts + layout_offset[li] + static_cast<size_t>(m) * l.row_bytes);
      }
#pragma omp barrier
    }
    if (m < kDynamicMinTokens || n == 1) {
      for (size_t j = 0; j < jobs.size(); ++j) {
        // Each job's rows in contiguous slices of whole 8-row tiles (the SIMD kernels' unit):
        // decode is memory-bound, and one sequential stream per thread reads fastest.
        const WeightView& w = *jobs[j].w;
        const size_t li = job_layout[j];
        const auto run = [&](int64_t r0, int64_t r1) {
          if (r0 < r1)
            fns[j](w, layouts[li], acts + layout_offset[li], m, jobs[j].bias, jobs[j].y, w.rows, r0,
                   r1);
        };
        const int64_t head = n == 1 ? w.rows : w.rows * kDecodeStaticEighths / 8 / 8 * 8;
        const int64_t chunk = ((head + n - 1) / n + 7) / 8 * 8;
        const int64_t r0 = std::min(head, chunk * ith);
        run(r0, std::min(head, r0 + chunk));
        for (;;) {
          const auto [first, count] = next_tail_piece(tail_next[j], w.rows - head, n);
          if (count == 0) break;
          run(head + first, head + first + count);
        }
      }
    } else {
      // Several tokens: compute-bound, so threads take kDynamicRows-row chunks of the jobs in
      // turn; a thread slowed down by another process on its core then does fewer chunks
      // instead of keeping the others waiting at the end of the region.
      for (;;) {
        int64_t item = next_item.fetch_add(1, std::memory_order_relaxed);
        size_t j = 0;
        while (j < jobs.size() && item >= job_items[j]) {
          item -= job_items[j];
          ++j;
        }
        if (j == jobs.size()) break;
        const WeightView& w = *jobs[j].w;
        const int64_t r0 = item * kDynamicRows, r1 = std::min(w.rows, r0 + kDynamicRows);
        const size_t li = job_layout[j];
        fns[j](w, layouts[li], acts + layout_offset[li], m, jobs[j].bias, jobs[j].y, w.rows, r0,
               r1);
      }
    }
  }
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

uint64_t stream_sum(const uint64_t* p, size_t n) {
  const cpu::CpuKernels& k = cpu::active_kernels();
  const auto sum = k.sum_u64 != nullptr ? k.sum_u64 : &cpu::reference::sum_u64;
  const int nth = num_threads();
  uint64_t total = 0;
#pragma omp parallel num_threads(nth) reduction(+ : total) if (nth > 1)
  {
    const auto ith = static_cast<size_t>(omp_get_thread_num());
    const auto nt = static_cast<size_t>(omp_get_num_threads());
    const size_t a = n / nt * ith + std::min(ith, n % nt);
    const size_t b = a + n / nt + (ith < n % nt ? 1 : 0);
    total += sum(p + a, b - a);
  }
  return total;
}

std::array<float, 2> rope_yarn_corr_dims(int32_t rot_dims, int32_t n_ctx_orig, float freq_base,
                                         float beta_fast, float beta_slow) {
  const auto corr_dim = [&](float n_rot) {
    return static_cast<float>(rot_dims) *
           std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2 * static_cast<float>(M_PI))) /
           (2 * std::log(freq_base));
  };
  const float start = std::floor(corr_dim(beta_fast));
  const float end = std::ceil(corr_dim(beta_slow));
  return {std::max(0.0f, start), std::min(static_cast<float>(rot_dims - 1), end)};
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  PAGODA_CHECK(n >= 0);
  // An exp and a division per element (~16 multiply-adds' time): batches and prefill split it
  // across threads in contiguous slices (elementwise, so the bits do not change).
  const int nth = threads_for(n * 16);
#pragma omp parallel num_threads(nth) if (nth > 1)
  {
    const int ith = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t i0 = n * ith / nt, i1 = n * (ith + 1) / nt;
    const cpu::CpuKernels& k = cpu::active_kernels();
    (k.silu_mul != nullptr ? k.silu_mul : &cpu::reference::silu_mul)(gate + i0, up + i0, i1 - i0,
                                                                     out + i0);
  }
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
