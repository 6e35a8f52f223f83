// libFuzzer target: the planner's hardware-table reader (data/hardware.json, --hardware-file,
// cpu calibration files), its "networks" reader and the --hardware argument on arbitrary bytes.
// Whatever it accepts must hold in range (every number finite and positive where the plan divides
// by it) and survive a write/read round trip.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "planner/hardware.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::planner;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)parse_hardware_request(text);
  // Networks: positive latency and bandwidth (the cost model divides by the bandwidth).
  if (auto nets = parse_networks_json(text); nets.ok()) {
    for (const Interconnect& n : *nets) {
      if (!(n.latency_us > 0 && n.bandwidth_gbs > 0) || !std::isfinite(n.bandwidth_gbs)) {
        __builtin_trap();
      }
      const double t = all_reduce_seconds(n, 8, 1e6) + message_seconds(n, 1e6);
      if (!(t > 0 && std::isfinite(t))) __builtin_trap();
    }
  }
  auto specs = parse_hardware_json(text);
  if (!specs.ok()) return 0;
  for (const HardwareSpec& s : *specs) {
    if (!(s.memory_gb > 0 && s.bandwidth_gbs > 0 && s.fp16_tflops > 0)) __builtin_trap();
    if (!(s.bandwidth_efficiency > 0 && s.compute_efficiency > 0)) __builtin_trap();
    if (s.max_devices < 1 || (s.max_devices > 1 && !(s.interconnect_gbs > 0))) __builtin_trap();
    if (!std::isfinite(s.usable_bytes())) __builtin_trap();
    for (const auto& [dtype, rate] : s.matmul) {
      if (!(rate.gemv_gbs > 0 && rate.gemm_gflops > 0)) __builtin_trap();
    }
    // Probed shapes: as many times as token counts, counts increasing from 1, times positive, so
    // the interpolation the roofline divides and multiplies by stays finite and positive.
    if (!(s.sync_us >= 0 && std::isfinite(s.sync_us))) __builtin_trap();
    for (const ShapeRate& r : s.shapes) {
      if (r.m.empty() || r.m.size() != r.seconds.size() || r.rows < 1 || r.cols < 1) {
        __builtin_trap();
      }
      for (size_t i = 0; i < r.m.size(); ++i) {
        if (!(r.m[i] >= 1 && r.seconds[i] > 0) || (i > 0 && !(r.m[i] > r.m[i - 1]))) {
          __builtin_trap();
        }
      }
      for (double tokens : {0.0, 1.0, 3.5, 1e6}) {
        const double t = r.seconds_at(tokens);
        if (!(t > 0 && std::isfinite(t))) __builtin_trap();
      }
    }
    auto back = parse_hardware_json(hardware_to_json(s));
    if (!back.ok() || back->size() != 1 || back->front().bandwidth_gbs != s.bandwidth_gbs ||
        back->front().shapes.size() != s.shapes.size()) {
      __builtin_trap();
    }
  }
  return 0;
}
