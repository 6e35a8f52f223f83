#include "planner/bandwidth_probe.h"

#include <algorithm>
#include <chrono>

#include "kernels/ops.h"

namespace pagoda::planner {

Result<BandwidthProbe> BandwidthProbe::create() {
  BandwidthProbe probe;
  PAGODA_ASSIGN_OR_RETURN(probe.memory_, PageBuffer::allocate(kBytes, HugePages::kYes));
  auto* buf = reinterpret_cast<uint64_t*>(probe.memory_.data());
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < kBytes / sizeof(uint64_t); ++i)
    buf[i] = i;
  return probe;
}

double BandwidthProbe::measure(int passes) {
  using Clock = std::chrono::steady_clock;
  double best = 0;
  for (int r = 0; r < passes; ++r) {
    const auto t0 = Clock::now();
    sink_ = sink_ + kernels::stream_sum(reinterpret_cast<const uint64_t*>(memory_.data()),
                                        kBytes / sizeof(uint64_t));
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    best = std::max(best, static_cast<double>(kBytes) / s / 1e9);
  }
  return best;
}

}  // namespace pagoda::planner
