#include "kernels/lora_expand.h"

#include <algorithm>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "kernels/team_op.h"

namespace pagoda::kernels {
namespace {
constexpr int64_t kMinWorkPerThread = 1 << 16;  // multiply-adds per extra thread (as ops.cc)
constexpr int64_t kExpandColumns = 64;          // columns per piece of work
}  // namespace

// LoRA expand: pieces of kExpandColumns columns of every job, in job order, in contiguous slices
// per thread (for_rows); a piece is the kernel over all of its job's rows, so the bits depend
// neither on the split nor on the other jobs.
void lora_expand(std::span<const LoraExpandJob> jobs) {
  const cpu::CpuKernels& k = cpu::active_kernels();
  const auto fn = k.lora_expand != nullptr ? k.lora_expand : &cpu::reference::lora_expand;
  // Pieces before each job (every thread of a team builds the same; reused, no allocation).
  thread_local std::vector<int64_t> first_storage;
  std::vector<int64_t>& first = first_storage;
  first.clear();
  int64_t items = 0, work = 0;
  for (const LoraExpandJob& job : jobs) {
    PAGODA_CHECK(job.bt != nullptr && job.rows >= 0);
    const WeightView& bt = *job.bt;
    PAGODA_CHECK(bt.dtype == tensor::DType::kF16 || bt.dtype == tensor::DType::kF32);
    PAGODA_CHECK(bt.rows > 0 && bt.cols > 0 && job.ldy >= bt.cols);
    PAGODA_CHECK(bt.row_bytes ==
                 static_cast<size_t>(bt.cols) * (bt.dtype == tensor::DType::kF16 ? 2 : 4));
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

}  // namespace pagoda::kernels
