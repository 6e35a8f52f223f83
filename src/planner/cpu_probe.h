// The `cpu` hardware entry, measured on the machine it runs on: read bandwidth (BandwidthProbe),
// memory available (/proc/meminfo MemAvailable), and for each weight type the speed of our own
// matmul kernels with the weights placed as a loaded model's are (backend::place_weights,
// packed where the ISA has a layout): a one-row matmul over a matrix far larger than the caches
// (decode: weight bytes per second) and a prefill-sized matmul (GFLOP/s). `pagoda plan
// --calibrate FILE` writes it as JSON (hardware.h's format) so later plans reuse it.
//
// With a model (`--calibrate FILE -m MODEL`), each distinct dense weight shape and type of the
// model's file is also timed per call at a few token counts (ShapeRate), inside a thread team as
// the forward pass runs (so the barrier after each matmul counts), cycling over copies whose
// total is the model's own weight bytes (capped): the caches hold as much of them as they would
// of the model. And one team barrier is timed (sync_us), the per-op cost of the other ops.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "planner/hardware.h"
#include "planner/model_spec.h"

namespace pagoda::planner {

struct CpuProbeOptions {
  int32_t threads = 0;                 // 0: all cores
  int64_t prefill_rows = 512;          // m of the prefill-sized matmul
  uint64_t gemv_bytes = 512ull << 20;  // bytes of the decode matrix (far above the caches)
  int repeats = 3;                     // best of
  std::vector<tensor::DType> types = {tensor::DType::kF16,  tensor::DType::kBF16,
                                      tensor::DType::kQ8_0, tensor::DType::kQ4_0,
                                      tensor::DType::kQ4_K, tensor::DType::kQ6_K};
  const PlanModel* model = nullptr;  // probe its shapes too (file matrices)
  std::vector<double> shape_tokens = {1, 8, 32, 128, 512};
  uint64_t max_working_set = 1ull << 30;  // bytes of copies cycled per shape
};

Result<HardwareSpec> probe_cpu(const CpuProbeOptions& options);

}  // namespace pagoda::planner
