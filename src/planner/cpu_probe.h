// The `cpu` hardware entry, measured on the machine it runs on: read bandwidth (BandwidthProbe),
// memory available (/proc/meminfo MemAvailable), and for each weight type the speed of our own
// matmul kernels with the weights placed as a loaded model's are (backend::place_weights,
// packed where the ISA has a layout): a one-row matmul over a matrix far larger than the caches
// (decode: weight bytes per second) and a prefill-sized matmul (GFLOP/s). `pagoda plan
// --calibrate FILE` writes it as JSON (hardware.h's format) so later plans reuse it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "planner/hardware.h"

namespace pagoda::planner {

struct CpuProbeOptions {
  int32_t threads = 0;                 // 0: all cores
  int64_t prefill_rows = 512;          // m of the prefill-sized matmul
  uint64_t gemv_bytes = 512ull << 20;  // bytes of the decode matrix (far above the caches)
  int repeats = 3;                     // best of
  std::vector<tensor::DType> types = {tensor::DType::kF16,  tensor::DType::kBF16,
                                      tensor::DType::kQ8_0, tensor::DType::kQ4_0,
                                      tensor::DType::kQ4_K, tensor::DType::kQ6_K};
};

Result<HardwareSpec> probe_cpu(const CpuProbeOptions& options);

}  // namespace pagoda::planner
