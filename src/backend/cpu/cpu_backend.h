// CpuBackend: host memory on transparent huge pages (PageBuffer), weights re-laid-out into the
// x86 kernels' tiles, forward passes on the kernels' OpenMP team.
#pragma once

#include "backend/backend.h"

namespace pagoda::backend {

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  Result<std::unique_ptr<DeviceBuffer>> allocate(uint64_t bytes, MemoryKind kind) override;
  void copy(uint8_t* dst, const uint8_t* src, uint64_t bytes) override;
  std::unique_ptr<DeviceBuffer> place_weights(std::span<kernels::WeightView* const> views) override;
  void execute(const std::function<void()>& pass) override;
};

}  // namespace pagoda::backend
