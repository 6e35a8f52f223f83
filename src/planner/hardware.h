// HardwareSpec: what `pagoda plan` needs to know about one accelerator (or this machine's CPU):
// memory, read bandwidth, dense FP16 / INT8 peaks, the interconnect tensor parallelism
// all-reduces over, and the fractions of those peaks a serving engine reaches. The GPU table is
// data/hardware.json (compiled in; `--hardware-file` replaces it); `cpu` comes from a probe
// (cpu_probe.h), which adds measured per-weight-type matmul rates. parse_hardware_json reads
// both and treats its input as hostile: every number is checked for range, every field's type
// named in errors.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "planner/parallel_cost.h"
#include "tensor/dtype.h"

namespace pagoda::planner {

// Measured speed of our matmul kernels for one weight type (cpu only).
struct MatmulRate {
  double gemv_gbs = 0;     // weight bytes per second read by a one-row matmul (decode)
  double gemm_gflops = 0;  // 2 * rows * cols * m per second at a prefill-sized m
};

// Measured time of one matmul call of our kernels at a model's real weight shape and type (cpu
// only), at a few token counts m: seconds[i] per call at m[i], m strictly increasing. Measured
// inside a thread team as the forward pass runs them (cpu_probe.h), so the barrier after each
// call and the cache behaviour of a working set the model's size are in the figure.
struct ShapeRate {
  tensor::DType dtype = tensor::DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> m;
  std::vector<double> seconds;

  // Seconds of one call at `tokens` rows: piecewise linear between the measured points, the
  // first point's time below it (a call never gets cheaper than one row), and linear in m beyond
  // the last (compute-bound there).
  double seconds_at(double tokens) const;
};

struct HardwareSpec {
  std::string name;  // "h100-sxm", "cpu"
  std::string description;
  double memory_gb = 0;         // per device, 1e9 bytes
  double bandwidth_gbs = 0;     // peak read bandwidth, 1e9 bytes/s
  double fp16_tflops = 0;       // dense FP16/BF16 tensor peak
  double int8_tops = 0;         // dense INT8 peak (0: no INT8 compute path)
  std::string interconnect;     // "nvlink4", "pcie4", "none"
  double interconnect_gbs = 0;  // per device, one direction
  int32_t max_devices = 1;      // devices one replica may span (tensor parallel)
  // Achievable fractions of the peaks, the usable share of memory, what the runtime keeps for
  // itself (context, activations, graphs) and the latency of one all-reduce.
  double bandwidth_efficiency = 0.8;
  double compute_efficiency = 0.6;
  double memory_utilization = 0.9;
  double reserved_gb = 1.5;
  double allreduce_latency_us = 10;
  // Per weight type (cpu): measured rates that replace the peak-times-fraction roofline.
  std::map<tensor::DType, MatmulRate> matmul;
  // Per weight shape (cpu, `pagoda plan --calibrate FILE -m MODEL`): they replace `matmul` for
  // the matrices they match. And one barrier of the forward pass's thread team, microseconds:
  // the per-op cost of the non-matmul ops (norms, rope, attention, adds) a step pays per layer.
  std::vector<ShapeRate> shapes;
  double sync_us = 0;
  std::vector<std::string> sources;

  bool is_cpu() const { return name == "cpu"; }
  // The link between the devices of one node (interconnect, interconnect_gbs,
  // allreduce_latency_us; latency per whole small all-reduce).
  Interconnect node_link() const;
  const ShapeRate* find_shape(tensor::DType dtype, int64_t rows, int64_t cols) const;
  // Bytes a device can hold for weights + KV: memory x utilization - reserved.
  double usable_bytes() const;
};

// Limits on a hardware file: anything outside is refused as corrupt.
struct HardwareLimits {
  static constexpr size_t kMaxFileBytes = 1 << 20;
  static constexpr size_t kMaxEntries = 256;
  static constexpr size_t kMaxSources = 16;
  static constexpr size_t kMaxStringBytes = 512;
  static constexpr double kMaxMemoryGb = 1e6;
  static constexpr double kMaxBandwidthGbs = 1e6;
  static constexpr double kMaxTflops = 1e6;
  static constexpr int32_t kMaxDevices = 1024;
  static constexpr double kMaxLatencyUs = 1e6;
  static constexpr size_t kMaxShapes = 256;
  static constexpr size_t kMaxShapePoints = 16;
  static constexpr double kMaxShapeDim = 1 << 24;
  static constexpr double kMaxShapeTokens = 1 << 20;
  static constexpr double kMaxShapeSeconds = 1e6;
};

// {"defaults": {...}, "hardware": [{...}, ...]} as in data/hardware.json, or one entry object
// (a cpu calibration file). Unknown fields are refused (typos must not silently become defaults);
// "_comment" is allowed anywhere. Errors are invalid_argument naming the entry and field.
Result<std::vector<HardwareSpec>> parse_hardware_json(std::string_view text);
// The file's "networks": the links between nodes (`pagoda plan --nodes N --network NAME`), e.g.
// {"name": "100gbe", "latency_us": 40, "bandwidth_gbs": 12.5, "ring_latency": true}. Empty when the
// file has none (a one-entry calibration file). Errors name the entry and field.
Result<std::vector<Interconnect>> parse_networks_json(std::string_view text);
const Interconnect* find_network(const std::vector<Interconnect>& table, std::string_view name);

// One entry as JSON (the calibration file `pagoda plan --calibrate` writes).
std::string hardware_to_json(const HardwareSpec& spec);

// The compiled-in table (data/hardware.json).
std::string_view builtin_hardware_json();

// "h100-sxm", "h100-sxmx8", "h100-sxm x8", "h100-sxm:8": the name and the device count (0 when
// not given). Errors name --hardware.
struct HardwareRequest {
  std::string name;
  int32_t count = 0;
};
Result<HardwareRequest> parse_hardware_request(std::string_view text);

const HardwareSpec* find_hardware(const std::vector<HardwareSpec>& table, std::string_view name);

}  // namespace pagoda::planner
