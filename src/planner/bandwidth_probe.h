// BandwidthProbe: this machine's read bandwidth in GB/s, all kernel threads summing a 1 GiB
// buffer on huge pages (as model weights are, base/page_buffer.h). Each measurement is the best
// of a few passes: on a shared machine the neighbours only ever lower it. Used by `pagoda bench`
// (its roofline percentage) and the planner's cpu probe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/page_buffer.h"
#include "base/status.h"

namespace pagoda::planner {

class BandwidthProbe {
 public:
  static Result<BandwidthProbe> create();
  double measure(int passes);

 private:
  static constexpr size_t kBytes = size_t{1} << 30;
  PageBuffer memory_;
  volatile uint64_t sink_ = 0;
};

}  // namespace pagoda::planner
