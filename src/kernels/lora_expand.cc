#include "kernels/lora_expand.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/act_layout.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/quantize_rows.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/team_op.h"

namespace pagoda::kernels {
namespace {
constexpr int64_t kMinWorkPerThread = 1 << 16;  // multiply-adds per extra thread (as ops.cc)
constexpr int64_t kExpandColumns = 64;          // columns per piece of work
// lora_apply: the expand of a whole job runs in column blocks of this many, every row per block,
// so a block of bt (rank x 256 values) stays in L1 while the rows reuse it.
constexpr int64_t kApplyColumns = 256;
// lora_apply's split of the shrink when whole jobs do not balance: A rows per piece (the float
// matmul kernels' tiles are 4 rows).
constexpr int64_t kShrinkRows = 8;
// Whole jobs count as balanced when no thread gets more than this much more than an even share
// (in eighths: 10/8 = 25%).
constexpr int64_t kBalancedEighths = 10;

using ExpandFn = void (*)(const WeightView& bt, const float* mid, int64_t rows,
                          const int32_t* index, float* y, int64_t ldy, int64_t c0, int64_t c1);

ExpandFn expand_fn(const cpu::CpuKernels& k) {
  return k.lora_expand != nullptr ? k.lora_expand : &cpu::reference::lora_expand;
}

size_t elem_bytes(tensor::DType dtype) {
  return dtype == tensor::DType::kF16 ? 2 : 4;
}

void check_lora_matrix(const WeightView& m) {
  PAGODA_CHECK(m.dtype == tensor::DType::kF16 || m.dtype == tensor::DType::kF32);
  PAGODA_CHECK(m.rows > 0 && m.cols > 0 && m.data != nullptr);
  PAGODA_CHECK(m.row_bytes == static_cast<size_t>(m.cols) * elem_bytes(m.dtype));
}
}  // namespace

// LoRA expand: pieces of kExpandColumns columns of every job, in job order, in contiguous slices
// per thread (for_rows); a piece is the kernel over all of its job's rows, so the bits depend
// neither on the split nor on the other jobs.
void lora_expand(std::span<const LoraExpandJob> jobs) {
  const ExpandFn fn = expand_fn(cpu::active_kernels());
  // Pieces before each job (every thread of a team builds the same; reused, no allocation). A
  // reference: the threads of a region of the op's own read the caller's (a lambda names a
  // thread_local variable itself, each thread its own copy, rather than capturing it).
  thread_local std::vector<int64_t> first_storage;
  std::vector<int64_t>& first = first_storage;
  first.clear();
  int64_t items = 0, work = 0;
  for (const LoraExpandJob& job : jobs) {
    PAGODA_CHECK(job.bt != nullptr && job.rows >= 0);
    const WeightView& bt = *job.bt;
    check_lora_matrix(bt);
    PAGODA_CHECK(job.ldy >= bt.cols);
    PAGODA_CHECK(job.rows == 0 || (job.mid != nullptr && job.y != nullptr));
    first.push_back(items);
    if (job.rows == 0) continue;
    items += (bt.cols + kExpandColumns - 1) / kExpandColumns;
    work += job.rows * bt.rows * bt.cols;
  }
  if (items == 0) return;
  team_detail::for_rows(
      items, work, kMinWorkPerThread, team_detail::available_threads(),
      [&](int64_t i0, int64_t i1) {
        for (int64_t item = i0; item < i1; ++item) {
          const size_t j = static_cast<size_t>(std::upper_bound(first.begin(), first.end(), item) -
                                               first.begin()) -
                           1;
          const LoraExpandJob& job = jobs[j];
          const int64_t c0 = (item - first[j]) * kExpandColumns;
          const int64_t c1 = std::min(job.bt->cols, c0 + kExpandColumns);
          fn(*job.bt, job.mid, job.rows, job.index, job.y, job.ldy, c0, c1);
        }
      });
}

namespace {
// What every thread of a lora_apply works from; each thread of a team builds the same one (no
// barrier). Reused: a steady state allocates nothing.
struct ApplyPlan {
  std::vector<int64_t> cost;    // per job: ~ its multiply-adds plus its bytes
  std::vector<size_t> bound;    // whole-job split: thread t runs jobs [bound[t], bound[t + 1])
  std::vector<int64_t> shrink;  // split mode: kShrinkRows-row pieces of A before each job
  std::vector<int64_t> expand;  // split mode: kExpandColumns-column pieces before each job
  int64_t shrink_items = 0, expand_items = 0;
};

// One thread's converted input rows: the last input converted (-1: none yet in this call) and
// its rows in the vec-dot layout of A's type (then the ISA's grouped form when its kernel reads
// one). Per thread, so a thread never waits for another's conversion.
struct ThreadActs {
  std::unique_ptr<uint8_t[]> storage;
  size_t capacity = 0;
  int32_t input = -1;
  cpu::ActType type = cpu::ActType::kF32;
  cpu::ActLayout layout;
  uint8_t* rows = nullptr;

  uint8_t* buffer(size_t bytes) {
    if (bytes + 64 > capacity) {
      capacity = std::max(bytes + 64, capacity * 2);
      storage = std::make_unique<uint8_t[]>(capacity);
    }
    const auto p = reinterpret_cast<uintptr_t>(storage.get());
    return reinterpret_cast<uint8_t*>((p + 63) & ~static_cast<uintptr_t>(63));
  }
};

// Input `input`'s rows converted for A `a` (reusing the thread's last conversion when it is the
// same input and type): the layout and the rows its matmul kernel reads.
const uint8_t* converted(const cpu::CpuKernels& k, ThreadActs& t, const GroupedInput& in,
                         int32_t input, const WeightView& a, cpu::ActLayout& layout) {
  const cpu::ActType type = cpu::act_type_for(a.dtype);
  if (t.input != input || t.type != type) {
    cpu::ActLayout l = cpu::act_layout(type, a.cols);
    const size_t grouped =
        k.group_acts_bytes != nullptr ? k.group_acts_bytes(a, l, in.m) : size_t{0};
    const size_t rows_bytes = static_cast<size_t>(in.m) * l.row_bytes;
    uint8_t* dst = t.buffer(rows_bytes + grouped);
    cpu::quantize_rows(k, l, in.x, in.rows, a.cols, 0, in.m, dst);
    if (grouped > 0) {
      k.group_acts(l, dst, in.m, 0, 1, dst + rows_bytes);
      l.grouped = true;
    }
    t.input = input;
    t.type = type;
    t.layout = l;
    t.rows = dst;
  }
  layout = t.layout;
  return t.rows;
}

// Rows [r0, r1) of job j's mid = A x (every row of its input).
void shrink_rows(const cpu::CpuKernels& k, ThreadActs& t, std::span<const GroupedInput> inputs,
                 const LoraJob& job, int64_t r0, int64_t r1) {
  const GroupedInput& in = inputs[static_cast<size_t>(job.input)];
  cpu::ActLayout layout;
  const uint8_t* acts = converted(k, t, in, job.input, job.a, layout);
  const cpu::MatmulRowsFn fn = k.matmul_rows(job.a.dtype);
  (fn != nullptr ? fn : &cpu::reference::matmul_rows)(job.a, layout, acts, in.m, nullptr, job.mid,
                                                      job.a.rows, r0, r1);
}

// Columns [c0, c1) of job j's y += mid Bt, in kApplyColumns blocks over every row.
void expand_columns(ExpandFn fn, std::span<const GroupedInput> inputs, const LoraJob& job,
                    int64_t c0, int64_t c1) {
  const GroupedInput& in = inputs[static_cast<size_t>(job.input)];
  for (int64_t c = c0; c < c1; c += kApplyColumns)
    fn(job.bt, job.mid, in.m, in.rows, job.y, job.ldy, c, std::min(c1, c + kApplyColumns));
}

// The job (by its first piece) that piece `item` belongs to.
size_t job_of(const std::vector<int64_t>& first, int64_t item) {
  return static_cast<size_t>(std::upper_bound(first.begin(), first.end(), item) - first.begin()) -
         1;
}
}  // namespace

void lora_apply(std::span<const GroupedInput> inputs, std::span<const LoraJob> jobs) {
  thread_local ApplyPlan plan;  // by reference below: a region of the op's own reads the caller's
  ApplyPlan& p = plan;
  p.cost.clear();
  int64_t total = 0, work = 0;
  for (const LoraJob& job : jobs) {
    check_lora_matrix(job.a);
    check_lora_matrix(job.bt);
    PAGODA_CHECK(job.a.packed == nullptr && job.a.input_order == nullptr &&
                 job.a.zero_term == nullptr);
    PAGODA_CHECK(job.bt.dtype == job.a.dtype && job.bt.rows == job.a.rows);
    PAGODA_CHECK(job.a.cols == jobs[0].a.cols && job.ldy >= job.bt.cols);
    PAGODA_CHECK(job.input >= 0 && static_cast<size_t>(job.input) < inputs.size());
    const GroupedInput& in = inputs[static_cast<size_t>(job.input)];
    PAGODA_CHECK(in.m >= 0 &&
                 (in.m == 0 || (in.x != nullptr && job.mid != nullptr && job.y != nullptr)));
    // Multiply-adds, plus the bytes of A and B (read once whatever the rows: at decode sizes
    // the job is about as much streaming as arithmetic).
    const int64_t values = job.a.rows * (job.a.cols + job.bt.cols);
    const int64_t madds = in.m * values;
    const int64_t c =
        in.m > 0 ? madds + values * static_cast<int64_t>(elem_bytes(job.a.dtype)) : int64_t{0};
    p.cost.push_back(c);
    total += c;
    work += madds;
  }
  if (total == 0) return;
  const cpu::CpuKernels& k = cpu::active_kernels();
  const ExpandFn expand = expand_fn(k);
  thread_local ThreadActs acts_storage;  // named in the threads' code: each thread's own
  const int nth = static_cast<int>(std::min<int64_t>(
      team_detail::available_threads(), std::max<int64_t>(1, work / kMinWorkPerThread)));
  if (nth == 1) {
    team_detail::run_first([&] {
      ThreadActs& acts = acts_storage;
      acts.input = -1;
      for (size_t j = 0; j < jobs.size(); ++j) {
        if (p.cost[j] == 0) continue;
        shrink_rows(k, acts, inputs, jobs[j], 0, jobs[j].a.rows);
        expand_columns(expand, inputs, jobs[j], 0, jobs[j].bt.cols);
      }
    });
    return;
  }
  // Whole jobs in order: thread t's share ends at the job boundary nearest to (t + 1) / nth of
  // the cost.
  p.bound.assign(1, 0);
  int64_t done = 0, most = 0, share = 0;
  size_t j = 0;
  for (int t = 1; t <= nth; ++t) {
    const int64_t target = total * t / nth;
    while (j < jobs.size() &&
           (t == nth || 2 * (done + p.cost[j]) <= 2 * target + p.cost[j])) {  // nearer after
      done += p.cost[j];
      share += p.cost[j];
      ++j;
    }
    p.bound.push_back(j);
    most = std::max(most, share);
    share = 0;
  }
  const bool whole_jobs = most * 8 * nth <= total * kBalancedEighths;
  if (!whole_jobs) {  // pieces of every job's A rows, then of its columns
    p.shrink.clear();
    p.expand.clear();
    p.shrink_items = p.expand_items = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      p.shrink.push_back(p.shrink_items);
      p.expand.push_back(p.expand_items);
      if (p.cost[i] == 0) continue;
      p.shrink_items += (jobs[i].a.rows + kShrinkRows - 1) / kShrinkRows;
      p.expand_items += (jobs[i].bt.cols + kExpandColumns - 1) / kExpandColumns;
    }
  }
  team_detail::run_op(nth, [&](team_detail::OpThread& t) {
    t.sync();  // the inputs and the y rows (the base matmul's) are complete
    const int n = std::min(t.size(), nth);
    const int ith = t.rank();
    ThreadActs& acts = acts_storage;
    acts.input = -1;
    if (whole_jobs) {
      if (ith < n) {
        for (size_t i = p.bound[static_cast<size_t>(ith)];
             i < p.bound[static_cast<size_t>(ith) + 1]; ++i) {
          if (p.cost[i] == 0) continue;
          shrink_rows(k, acts, inputs, jobs[i], 0, jobs[i].a.rows);
          expand_columns(expand, inputs, jobs[i], 0, jobs[i].bt.cols);
        }
      }
      t.wrote_all();
      return;
    }
    if (ith < n) {
      const int64_t i0 = p.shrink_items * ith / n, i1 = p.shrink_items * (ith + 1) / n;
      for (int64_t item = i0; item < i1; ++item) {
        const size_t i = job_of(p.shrink, item);
        const int64_t r0 = (item - p.shrink[i]) * kShrinkRows;
        shrink_rows(k, acts, inputs, jobs[i], r0, std::min(jobs[i].a.rows, r0 + kShrinkRows));
      }
    }
    t.wrote_all();
    t.sync();  // every mid complete
    if (ith < n) {
      const int64_t i0 = p.expand_items * ith / n, i1 = p.expand_items * (ith + 1) / n;
      for (int64_t item = i0; item < i1; ++item) {
        const size_t i = job_of(p.expand, item);
        const int64_t c0 = (item - p.expand[i]) * kExpandColumns;
        expand_columns(expand, inputs, jobs[i], c0, std::min(jobs[i].bt.cols, c0 + kExpandColumns));
      }
    }
    t.wrote_all();
  });
}

}  // namespace pagoda::kernels
