// Op fronts: check each op's shape contract (violations are bugs in the caller, so PAGODA_CHECK),
// then run the active ISA's kernel (kernels/isa.h), splitting the work across OpenMP threads.
//
// Threading (kernels/team.h): an op runs on the caller's team when the caller is in one (a
// forward pass: one parallel region for the whole pass), else in a region of its own. matmul:
// the first thread converts the activations (all threads do for several tokens), barrier, the
// ISA's grouped form of them if it has one (another barrier), then for decode each thread
// computes a contiguous slice of most output rows and the threads share the rest in small pieces;
// for several tokens they take 64-row chunks in turn; a matmul_group does that for several
// weights sharing one input, and matmul_grouped (MoE experts) for many weights over many inputs,
// always in 64-row chunks: all three are one mechanism (run_step). Threads never split a dot
// product, so results do not depend on the thread count. Small ops (norms, elementwise, rope,
// softmax) run on one thread (the team's first) at decode sizes, where a barrier would cost more
// than they do, and in contiguous row slices when a batch or a prompt makes them worth splitting.
#include "kernels/ops.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/quantize_rows.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/isa.h"
#include "kernels/matmul_observer.h"
#include "kernels/quant.h"
#include "kernels/team.h"
#include "kernels/team_op.h"

namespace pagoda::kernels {
namespace {

// Multiply-adds below which an extra thread costs more than it saves (a barrier or a fork/join is
// ~1-5 us).
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

// x[0] + ... + x[n - 1] in 8 interleaved partial sums (vectorised; a fixed order).
float sum_floats(const float* x, int64_t n) {
  float part[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int l = 0; l < 8; ++l)
      part[l] += x[i + l];
  }
  for (; i < n; ++i)
    part[0] += x[i];
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// y[r] += sum_g z[g * stride + r] * sums[g] for r in [r0, r1): a weight's zero term (weight_view.h)
// for one token, 64 rows at a time accumulated in registers over the groups.
[[gnu::always_inline]] inline void zero_term_rows(float* y, const float* z, int64_t stride,
                                                  const float* sums, int64_t groups, int64_t r0,
                                                  int64_t r1) {
  constexpr int64_t kRows = 64;
  for (int64_t rb = r0; rb < r1; rb += kRows) {
    const int64_t n = std::min(kRows, r1 - rb);
    float acc[kRows] = {};
    for (int64_t g = 0; g < groups; ++g) {
      const float s = sums[g];
      const float* zg = z + g * stride + rb;
      for (int64_t i = 0; i < n; ++i)
        acc[i] += zg[i] * s;
    }
    for (int64_t i = 0; i < n; ++i)
      y[rb + i] += acc[i];
  }
}

#if defined(__x86_64__)
[[gnu::target("avx2,fma")]] void zero_term_rows_avx2(float* y, const float* z, int64_t stride,
                                                     const float* sums, int64_t groups, int64_t r0,
                                                     int64_t r1) {
  zero_term_rows(y, z, stride, sums, groups, r0, r1);
}
#endif

void zero_term_rows_baseline(float* y, const float* z, int64_t stride, const float* sums,
                             int64_t groups, int64_t r0, int64_t r1) {
  zero_term_rows(y, z, stride, sums, groups, r0, r1);
}

// AVX2 + FMA when the active kernels are x86 SIMD ones (isa.h), else the baseline build.
void add_zero_term(float* y, const float* z, int64_t stride, const float* sums, int64_t groups,
                   int64_t r0, int64_t r1) {
#if defined(__x86_64__)
  const Isa isa = active_isa();
  if (isa == Isa::kAvx2 || isa == Isa::kAvx512 || isa == Isa::kAmx) {
    zero_term_rows_avx2(y, z, stride, sums, groups, r0, r1);
    return;
  }
#endif
  zero_term_rows_baseline(y, z, stride, sums, groups, r0, r1);
}

int threads_for(int64_t work) {
  const int64_t useful = std::max<int64_t>(1, work / kMinWorkPerThread);
  return static_cast<int>(std::min<int64_t>(team_detail::available_threads(), useful));
}

// fn(r0, r1) over slices of [0, rows) (team_op.h), split when `work` is worth it.
template <class Fn>
void for_rows(int64_t rows, int64_t work, Fn&& fn) {
  team_detail::for_rows(rows, work, kMinWorkPerThread, team_detail::available_threads(), fn);
}

std::atomic<MatmulObserver*> g_observer{nullptr};

void check_weight(const WeightView& w) {
  PAGODA_CHECK(can_dequantize(w.dtype));
  PAGODA_CHECK(w.rows >= 0 && w.cols >= 0);
  auto row_bytes = tensor::row_size_bytes(w.dtype, static_cast<uint64_t>(w.cols));
  PAGODA_CHECK(row_bytes.ok() && *row_bytes == w.row_bytes);
  PAGODA_CHECK(w.data != nullptr || w.rows == 0);
  PAGODA_CHECK(w.zero_term == nullptr || (w.zero_group > 0 && w.zero_stride >= w.rows));
}

}  // namespace

void set_matmul_observer(MatmulObserver* observer) {
  g_observer.store(observer, std::memory_order_release);
}

MatmulObserver* matmul_observer() {
  return g_observer.load(std::memory_order_acquire);
}

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

// Batches of more tokens than the kernels stream as a decode (CpuKernels::decode_tokens) split
// rows dynamically, in chunks of kDynamicRows (a multiple of the kernels' 8-row tile: 8 tiles keep
// the packed next-tile prefetch useful).
constexpr int64_t kDynamicRows = 64;
// Decode (up to decode_tokens tokens): each thread first streams its contiguous share of
// kDecodeStaticEighths/8 of a job's rows, then the threads share the rest in shrinking pieces
// (guided: a thread takes 1/(2 x threads) of what is left, in whole tile pairs, at least one pair),
// so a thread that got less of the memory bandwidth (or of its core) does less of the tail instead
// of keeping the other waiting at the end of the region, and the last pieces are one pair each.
// Measured on the Zen 3 VM, TinyLlama Q4_0 decode, per-step alternation in one process: 7/8 static
// + 32-row tail 1.8-3.7% faster per token than all static; 3/4 about the same as 7/8, 1/2 and 5/8
// no gain. On the SPR VM (`pagoda bench`, 3 alternating rounds) guided pieces against fixed 32-row
// ones: Q4_0 88-89 -> 90-91% of the roofline, Q8_0 95 -> 96-98%, Q4_K_M 74-77 -> 76-79%; a 3/4
// static share with them was no better, fixed 16-row pieces were worse.
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

// One converted copy of an input's rows, per vec-dot type, input order and zero group its jobs
// read (gate and up share theirs; Q4_K_M's Q4_K and Q6_K both read Q8_K). An act-order weight
// (weight_view.h) reads the rows gathered by its input order; one with a zero term also reads
// each row's sums over its zero groups (of the gathered row).
struct ActSlot {
  int32_t input = 0;
  cpu::ActLayout layout;
  const int32_t* order = nullptr;
  int64_t zero_group = 0;    // > 0: the rows' group sums follow them
  size_t offset = 0;         // of the m converted rows, then of their grouped form
  size_t grouped_bytes = 0;  // the ISA's grouped form of the rows, when a job's kernel reads it
  size_t sums = 0;           // offset of the [m, groups] f32 sums, when zero_group > 0
};

// One job of a step: matmul_group's MatmulJob or matmul_grouped's GroupedJob.
struct StepJob {
  const WeightView* w = nullptr;
  int32_t input = 0;
  float* y = nullptr;
  const float* bias = nullptr;
};

struct JobPlan {
  size_t slot = 0;
  cpu::MatmulRowsFn fn = nullptr;
  int64_t first_item = 0;  // kDynamicRows-row pieces of the jobs before it
};

// What every thread of a step works from; each thread of a team builds the same one (no
// barrier), and a region of the step's own reads its caller's. Reused: steady state allocates
// nothing.
struct StepPlan {
  std::vector<ActSlot> slots;
  std::vector<JobPlan> jobs;
  std::vector<int64_t> first_row;  // per input: its first row among the rows converted, or -1
  int64_t rows = 0;                // the rows converted: every used input's, one after another
  int64_t items = 0;               // kDynamicRows-row pieces of every job with rows
  int64_t work = 0, rows_total = 0, max_m = 0;
  int64_t decode_tokens = INT64_MAX;  // the fewest any job's kernel streams as a decode
  size_t bytes = 0;
  bool any_grouped = false, any_gather = false;
};

constexpr size_t align64(size_t n) {
  return (n + 63) / 64 * 64;
}

void plan_step(std::span<const GroupedInput> inputs, std::span<const StepJob> jobs, int64_t cols,
               StepPlan& p) {
  const cpu::CpuKernels& k = cpu::active_kernels();
  p.slots.clear();
  p.jobs.clear();
  p.first_row.assign(inputs.size(), -1);
  p.rows = p.items = p.work = p.rows_total = p.max_m = 0;
  p.decode_tokens = INT64_MAX;
  p.bytes = 0;
  p.any_grouped = p.any_gather = false;
  for (const StepJob& job : jobs) {
    const WeightView& w = *job.w;
    check_weight(w);
    PAGODA_CHECK(w.cols == cols && job.y != nullptr);
    PAGODA_CHECK(job.input >= 0 && static_cast<size_t>(job.input) < inputs.size());
    const GroupedInput& in = inputs[static_cast<size_t>(job.input)];
    PAGODA_CHECK(in.m >= 0 && (in.m == 0 || in.x != nullptr));
    const cpu::ActType type = cpu::act_type_for(w.dtype);
    const int64_t zero_group = w.zero_term != nullptr ? w.zero_group : 0;
    size_t si = p.slots.size();  // the latest slot first (an input's jobs come together)
    while (si > 0) {
      const ActSlot& s = p.slots[si - 1];
      if (s.input == job.input && s.layout.type == type && s.order == w.input_order &&
          s.zero_group == zero_group)
        break;
      --si;
    }
    if (si == 0) {
      ActSlot s;
      s.input = job.input;
      s.layout = cpu::act_layout(type, cols);
      s.order = w.input_order;
      s.zero_group = zero_group;
      p.slots.push_back(s);
      si = p.slots.size();
      int64_t& first = p.first_row[static_cast<size_t>(job.input)];
      if (first < 0) {
        first = p.rows;
        p.rows += in.m;
      }
    }
    ActSlot& slot = p.slots[si - 1];
    if (k.group_acts_bytes != nullptr && in.m > 0)
      slot.grouped_bytes = std::max(slot.grouped_bytes, k.group_acts_bytes(w, slot.layout, in.m));
    const cpu::MatmulRowsFn fn = k.matmul_rows(w.dtype);
    p.jobs.push_back({si - 1, fn != nullptr ? fn : &cpu::reference::matmul_rows, p.items});
    if (in.m > 0) {
      p.items += (w.rows + kDynamicRows - 1) / kDynamicRows;
      p.work += w.rows * std::max<int64_t>(cols, 1) * in.m;
      p.rows_total += w.rows;
      p.max_m = std::max(p.max_m, in.m);
      p.decode_tokens = std::min(
          p.decode_tokens, k.decode_tokens != nullptr ? k.decode_tokens(w) : cpu::kDecodeTokens);
    }
  }
  for (ActSlot& s : p.slots) {  // each slot's rows, their grouped form, their sums (64-aligned)
    const int64_t m = inputs[static_cast<size_t>(s.input)].m;
    s.offset = p.bytes;
    p.bytes += static_cast<size_t>(m) * s.layout.row_bytes + s.grouped_bytes;
    if (s.zero_group > 0) {
      const auto groups = static_cast<size_t>((cols + s.zero_group - 1) / s.zero_group);
      s.sums = align64(p.bytes);
      p.bytes = align64(s.sums + static_cast<size_t>(m) * groups * sizeof(float));
    }
    s.layout.grouped = s.grouped_bytes > 0;
    p.any_grouped = p.any_grouped || s.layout.grouped;
    p.any_gather = p.any_gather || s.order != nullptr || s.zero_group > 0;
  }
}

// Rows [a, b) of slot s's input converted: x's rows (gathered by the input's index), gathered by
// the slot's input order into `gather` (cols floats), and summed over its zero groups.
void convert_slot_rows(const cpu::CpuKernels& k, const ActSlot& s, const GroupedInput& in,
                       int64_t cols, int64_t a, int64_t b, uint8_t* acts, float* gather) {
  const cpu::ActLayout& l = s.layout;
  uint8_t* dst = acts + s.offset + static_cast<size_t>(a) * l.row_bytes;
  if (s.order == nullptr && s.zero_group == 0) {
    cpu::quantize_rows(k, l, in.x, in.rows, cols, a, b, dst);
    return;
  }
  const int64_t zg = s.zero_group;
  const int64_t groups = zg > 0 ? (cols + zg - 1) / zg : 0;
  for (int64_t i = a; i < b; ++i, dst += l.row_bytes) {
    const float* xr = in.x + (in.rows != nullptr ? static_cast<int64_t>(in.rows[i]) : i) * cols;
    if (s.order != nullptr) {
      for (int64_t c = 0; c < cols; ++c)
        gather[c] = xr[s.order[c]];
      xr = gather;
    }
    k.quantize_acts(l, xr, 1, dst);
    if (zg > 0) {
      float* sums = reinterpret_cast<float*>(acts + s.sums) + i * groups;
      for (int64_t g = 0; g < groups; ++g)
        sums[g] = sum_floats(xr + g * zg, std::min(zg, cols - g * zg));
    }
  }
}

// The observer sees one call per job with rows, over its input's rows (gathered for it).
void observe_step(MatmulObserver& observer, std::span<const GroupedInput> inputs,
                  std::span<const StepJob> jobs, int64_t cols) {
  team_first([&] {
    std::vector<float> gathered;
    for (const StepJob& job : jobs) {
      const GroupedInput& in = inputs[static_cast<size_t>(job.input)];
      if (in.m == 0) continue;
      const float* x = in.x;
      if (in.rows != nullptr) {
        gathered.resize(static_cast<size_t>(in.m * cols));
        for (int64_t i = 0; i < in.m; ++i) {
          std::copy_n(in.x + static_cast<int64_t>(in.rows[i]) * cols, cols,
                      gathered.data() + i * cols);
        }
        x = gathered.data();
      }
      observer.observe(*job.w, x, in.m);
    }
  });
}

// One matmul step, the mechanism under matmul_group and matmul_grouped: y_j = x_{input_j} ·
// w_jᵀ (+ bias_j) for every job, in one region of three phases: the used inputs' rows converted
// once per slot (ActSlot; the rows split across the threads, or converted by the first thread
// when there are fewer rows than threads), their grouped form where the ISA has one, then the
// jobs' rows: with `decode_slices` and every input a decode (up to decode_tokens rows), each job
// in a contiguous slice per thread and a guided tail; else kDynamicRows-row pieces of every job
// handed out in turn. Each piece is the job's matmul_rows over its slot's rows, then its zero
// term, so the bits are those of one matmul per job whatever the split.
void run_step(std::span<const GroupedInput> inputs, std::span<const StepJob> jobs,
              bool decode_slices) {
  if (jobs.empty()) return;
  const int64_t cols = jobs[0].w->cols;
  thread_local StepPlan plan_storage;
  StepPlan& p = plan_storage;
  plan_step(inputs, jobs, cols, p);
  if (MatmulObserver* observer = matmul_observer()) observe_step(*observer, inputs, jobs, cols);
  if (p.items == 0) return;
  const cpu::CpuKernels& k = cpu::active_kernels();
  const int nth = p.rows_total >= 16 ? threads_for(p.work) : 1;
  // Input orders gather one x row at a time into a slot of cols floats per converting thread.
  const size_t gather_offset = align64(p.bytes);
  const size_t gather_bytes = align64(static_cast<size_t>(cols) * sizeof(float));
  const size_t bytes =
      p.any_gather ? gather_offset + static_cast<size_t>(nth) * gather_bytes : p.bytes;
  // Rows [r0, r1) of the rows converted, for every slot that reads them; `thread`: the calling
  // thread's gather slot.
  const auto convert = [&](uint8_t* acts, int64_t r0, int64_t r1, int thread) {
    float* gather = p.any_gather
                        ? reinterpret_cast<float*>(acts + gather_offset +
                                                   static_cast<size_t>(thread) * gather_bytes)
                        : nullptr;
    for (const ActSlot& s : p.slots) {
      const GroupedInput& in = inputs[static_cast<size_t>(s.input)];
      const int64_t first = p.first_row[static_cast<size_t>(s.input)];
      const int64_t a = std::max(r0, first) - first;
      const int64_t b = std::min(r1, first + in.m) - first;
      if (a < b) convert_slot_rows(k, s, in, cols, a, b, acts, gather);
    }
  };
  // Part `part` of `parts` of every grouped slot's grouped form (it follows the slot's rows).
  const auto group = [&](uint8_t* acts, int part, int parts) {
    for (const ActSlot& s : p.slots) {
      if (!s.layout.grouped) continue;
      const int64_t m = inputs[static_cast<size_t>(s.input)].m;
      uint8_t* rows = acts + s.offset;
      k.group_acts(s.layout, rows, m, part, parts,
                   rows + static_cast<size_t>(m) * s.layout.row_bytes);
    }
  };
  // Rows [r0, r1) of job j, and its zero term: y[t][r] += sum_g z(g, r) sums[t][g].
  const auto run_rows = [&](size_t j, const uint8_t* acts, int64_t r0, int64_t r1) {
    if (r0 >= r1) return;
    const StepJob& job = jobs[j];
    const WeightView& w = *job.w;
    const ActSlot& s = p.slots[p.jobs[j].slot];
    const int64_t m = inputs[static_cast<size_t>(s.input)].m;
    p.jobs[j].fn(w, s.layout, acts + s.offset, m, job.bias, job.y, w.rows, r0, r1);
    if (s.zero_group > 0) {
      const int64_t groups = w.zero_groups();
      const auto* sums = reinterpret_cast<const float*>(acts + s.sums);
      for (int64_t t = 0; t < m; ++t) {
        add_zero_term(job.y + t * w.rows, w.zero_term, w.zero_stride, sums + t * groups, groups, r0,
                      r1);
      }
    }
  };
  // Piece `item` of the jobs: kDynamicRows rows of one job.
  const auto run_item = [&](const uint8_t* acts, int64_t item) {
    const auto it =
        std::upper_bound(p.jobs.begin(), p.jobs.end(), item,
                         [](int64_t i, const JobPlan& jp) { return i < jp.first_item; });
    const size_t j = static_cast<size_t>(it - p.jobs.begin()) - 1;
    const int64_t r0 = (item - p.jobs[j].first_item) * kDynamicRows;
    run_rows(j, acts, r0, std::min(jobs[j].w->rows, r0 + kDynamicRows));
  };
  if (nth == 1) {  // on one thread: the caller, or the team's first
    team_detail::run_first([&] {
      uint8_t* acts = act_buffer(bytes);
      convert(acts, 0, p.rows, 0);
      group(acts, 0, 1);
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (inputs[static_cast<size_t>(jobs[j].input)].m > 0) run_rows(j, acts, 0, jobs[j].w->rows);
      }
    });
    return;
  }
  const bool decode =
      decode_slices && p.max_m <= p.decode_tokens && jobs.size() < team_detail::OpShared::kCounters;
  // Fewer rows than threads (decode): the first thread (the caller, which has just written x and
  // holds it in its cache) converts them while the others wait, so no thread waits for another's
  // remote reads. Measured on the SPR VM, TinyLlama Q4_K_M decode: a worker took 2.9 us on
  // average to convert the one row while the caller waited 3.3 us, in each of the step's ~90
  // regions.
  const bool split_convert = p.rows >= nth;
  team_detail::run_op(nth, [&](team_detail::OpThread& t) {
    // A team may have more threads than this step is worth: the rest only pass the barriers.
    const int n = std::min(t.size(), nth);
    const int ith = t.rank();
    team_detail::OpShared& shared = t.shared();
    t.first([&] {
      shared.buffer = act_buffer(bytes);
      for (auto& c : shared.counters)
        c.store(0, std::memory_order_relaxed);
      if (!split_convert) convert(shared.buffer, 0, p.rows, 0);
    });
    t.sync();
    uint8_t* acts = shared.buffer;
    if (split_convert) {
      if (ith < n) convert(acts, p.rows * ith / n, p.rows * (ith + 1) / n, ith);
      t.wrote_all();
      t.sync();
    }
    if (p.any_grouped) {
      if (ith < n) group(acts, ith, n);
      t.wrote_all();
      t.sync();
    }
    t.wrote_all();
    if (ith >= n) return;
    if (decode) {
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (inputs[static_cast<size_t>(jobs[j].input)].m == 0) continue;
        // Each job's rows in contiguous slices of whole 8-row tiles (the SIMD kernels' unit):
        // decode is memory-bound, and one sequential stream per thread reads fastest.
        const int64_t rows = jobs[j].w->rows;
        const int64_t head = rows * kDecodeStaticEighths / 8 / 8 * 8;
        const int64_t chunk = ((head + n - 1) / n + 7) / 8 * 8;
        const int64_t r0 = std::min(head, chunk * ith);
        run_rows(j, acts, r0, std::min(head, r0 + chunk));
        for (;;) {
          const auto [first, count] = next_tail_piece(shared.counters[1 + j], rows - head, n);
          if (count == 0) break;
          run_rows(j, acts, head + first, head + first + count);
        }
      }
      return;
    }
    // Several tokens: compute-bound, so threads take kDynamicRows-row pieces of the jobs in turn
    // (job by job, so they stream neighbouring rows of one weight at a time); a thread slowed
    // down by another process on its core then does fewer pieces instead of keeping the others
    // waiting at the end of the region.
    for (;;) {
      const int64_t item = shared.counters[0].fetch_add(1, std::memory_order_relaxed);
      if (item >= p.items) break;
      run_item(acts, item);
    }
  });
}

}  // namespace

void matmul_group(std::span<const MatmulJob> jobs, const float* x, int64_t m) {
  PAGODA_CHECK(m >= 0);
  if (jobs.empty() || m == 0) return;
  // Every job slices its rows at decode sizes: one counter each for the tails.
  constexpr size_t kMaxJobs = team_detail::OpShared::kCounters - 1;
  PAGODA_CHECK(jobs.size() <= kMaxJobs);
  const GroupedInput input{x, nullptr, m};
  StepJob step[kMaxJobs];
  for (size_t j = 0; j < jobs.size(); ++j)
    step[j] = {jobs[j].w, 0, jobs[j].y, jobs[j].bias};
  run_step(std::span<const GroupedInput>(&input, 1), std::span<const StepJob>(step, jobs.size()),
           /*decode_slices=*/true);
}

void matmul_grouped(std::span<const GroupedInput> inputs, std::span<const GroupedJob> jobs) {
  thread_local std::vector<StepJob> step;  // reused: steady state allocates nothing
  step.clear();
  for (const GroupedJob& job : jobs)
    step.push_back({job.w, job.input, job.y, nullptr});
  run_step(inputs, step, /*decode_slices=*/false);
}

void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out) {
  check_weight(table);
  // Loaders refuse act-order and zero-term tables (loader/hf/hf_checkpoint.cc).
  PAGODA_CHECK(n >= 0 && table.input_order == nullptr && table.zero_term == nullptr);
  for (int64_t i = 0; i < n; ++i)
    PAGODA_CHECK(ids[i] >= 0 && ids[i] < table.rows);
  cpu::reference::get_rows(table, ids, n, out);
}

void rms_norm(const float* x, const float* weight, int64_t rows, int64_t dim, float eps, float* y) {
  PAGODA_CHECK(rows >= 0 && dim > 0);
  const cpu::CpuKernels& k = cpu::active_kernels();
  const auto fn = k.rms_norm != nullptr ? k.rms_norm : &cpu::reference::rms_norm;
  for_rows(rows, rows * dim * 2, [&](int64_t r0, int64_t r1) {
    fn(x + r0 * dim, weight, r1 - r0, dim, eps, y + r0 * dim);
  });
}

void rope(float* x, int64_t num_tokens, int64_t num_heads, int64_t head_dim,
          const int32_t* positions, const RopeParams& params) {
  PAGODA_CHECK(num_tokens >= 0 && num_heads >= 0);
  PAGODA_CHECK(params.rot_dims > 0 && params.rot_dims % 2 == 0 && params.rot_dims <= head_dim);
  PAGODA_CHECK(params.freq_factors.empty() ||
               params.freq_factors.size() == static_cast<size_t>(params.rot_dims / 2));
  // ~16 flops per rotated pair, and a sin and cos per pair and token.
  const int64_t row = num_heads * head_dim;
  for_rows(num_tokens, num_tokens * row * 16, [&](int64_t t0, int64_t t1) {
    cpu::reference::rope(x + t0 * row, t1 - t0, num_heads, head_dim, positions + t0, params);
  });
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
  const cpu::CpuKernels& k = cpu::active_kernels();
  const auto fn = k.silu_mul != nullptr ? k.silu_mul : &cpu::reference::silu_mul;
  for_rows(n, n * 16, [&](int64_t i0, int64_t i1) { fn(gate + i0, up + i0, i1 - i0, out + i0); });
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  PAGODA_CHECK(n >= 0);
  for_rows(n, n * 16, [&](int64_t i0, int64_t i1) {
    cpu::reference::gelu_tanh_mul(gate + i0, up + i0, i1 - i0, out + i0);
  });
}

void softcap(float* x, int64_t n, float cap) {
  PAGODA_CHECK(n >= 0 && cap > 0);
  for_rows(n, n * 16,
           [&](int64_t i0, int64_t i1) { cpu::reference::softcap(x + i0, i1 - i0, cap); });
}

void softmax(float* x, int64_t rows, int64_t dim) {
  PAGODA_CHECK(rows >= 0 && dim >= 0);
  for_rows(rows, rows * dim * 16,
           [&](int64_t r0, int64_t r1) { cpu::reference::softmax(x + r0 * dim, r1 - r0, dim); });
}

void head_matmul(const float* w, int64_t num_heads, int64_t in_dim, int64_t out_dim, const float* x,
                 HeadRows xs, int64_t num_tokens, float* y, HeadRows ys) {
  PAGODA_CHECK(num_heads >= 0 && in_dim > 0 && out_dim > 0 && num_tokens >= 0);
  for_rows(num_heads, num_heads * num_tokens * in_dim * out_dim, [&](int64_t h0, int64_t h1) {
    cpu::reference::head_matmul(w, h0, h1, in_dim, out_dim, x, xs, num_tokens, y, ys);
  });
}

void add_inplace(float* y, const float* x, int64_t n) {
  PAGODA_CHECK(n >= 0);
  const cpu::CpuKernels& k = cpu::active_kernels();
  const auto fn = k.add_inplace != nullptr ? k.add_inplace : &cpu::reference::add_inplace;
  for_rows(n, n, [&](int64_t i0, int64_t i1) { fn(y + i0, x + i0, i1 - i0); });
}

void weighted_row_sum(const float* src, const int32_t* index, const float* weights, int64_t rows,
                      int64_t k, int64_t dim, float* out) {
  PAGODA_CHECK(rows >= 0 && k >= 0 && dim >= 0);
  for_rows(rows, rows * (k + 1) * dim, [&](int64_t r0, int64_t r1) {
    cpu::reference::weighted_row_sum(src, index + r0 * k, weights + r0 * k, r1 - r0, k, dim,
                                     out + r0 * dim);
  });
}

}  // namespace pagoda::kernels
