// The CPU backend (see cpu_backend.h).
#include "backend/cpu/cpu_backend.h"

#include <cstring>
#include <vector>

#include "base/log.h"
#include "base/mapped_file.h"
#include "base/page_buffer.h"
#include "kernels/ops.h"
#include "kernels/team.h"

namespace pagoda::backend {
namespace {

class HostBuffer final : public DeviceBuffer {
 public:
  explicit HostBuffer(PageBuffer pages) : pages_(std::move(pages)) {}
  uint8_t* data() override { return pages_.data(); }
  uint64_t size() const override { return pages_.size(); }

 private:
  PageBuffer pages_;
};

}  // namespace

Result<std::unique_ptr<DeviceBuffer>> CpuBackend::allocate(uint64_t bytes, MemoryKind kind) {
  // On huge pages: decode streams the weights at the machine's full read bandwidth, and
  // attention walks every sequence's KV blocks (fewer TLB misses, prefetchers not stopped at
  // 4 KiB).
  PAGODA_ASSIGN_OR_RETURN(PageBuffer pages, PageBuffer::allocate(bytes, HugePages::kYes));
  if (kind == MemoryKind::kKvCache) {
    // Populated now, as llama.cpp clears its KV buffer at context creation and vLLM reserves its
    // cache at startup: the memory is committed before the first request, and no request takes
    // page faults (or a synchronous huge-page compaction) on fresh blocks.
    PAGODA_RETURN_IF_ERROR(pages.populate());
  }
  return std::unique_ptr<DeviceBuffer>(new HostBuffer(std::move(pages)));
}

void CpuBackend::copy(uint8_t* dst, const uint8_t* src, uint64_t bytes) {
  std::memcpy(dst, src, bytes);
}

std::unique_ptr<DeviceBuffer> CpuBackend::place_weights(
    std::span<kernels::WeightView* const> views) {
  // Where each goes in one buffer: the packed copy where the kernels have a layout, else the
  // bytes as stored; 64-byte aligned (cache lines).
  struct Placement {
    size_t offset = 0, bytes = 0;
    bool packed = false;
  };
  std::vector<Placement> places;
  size_t total = 0;
  for (const kernels::WeightView* w : views) {
    Placement p{total, 0, false};
    if (w->data != nullptr && w->rows > 0) {  // (not a MoE layer's empty dense FFN views)
      p.bytes = kernels::packed_size(*w);
      p.packed = p.bytes > 0;
      if (!p.packed) p.bytes = static_cast<size_t>(w->rows) * w->row_bytes;
    }
    places.push_back(p);
    total += (p.bytes + 63) / 64 * 64;  // no overflow: a copy of what is already in memory
  }
  auto buffer = allocate(total, MemoryKind::kWeights);
  if (!buffer.ok()) {
    PAGODA_LOG_WARN("weights stay in the file mapping ({}): decode reads them more slowly",
                    buffer.status().message());
    return nullptr;
  }
  std::unique_ptr<DeviceBuffer> memory = std::move(buffer).value();
  for (size_t i = 0; i < views.size(); ++i) {
    kernels::WeightView& w = *views[i];
    const Placement& p = places[i];
    if (p.bytes == 0) continue;
    uint8_t* dst = memory->data() + p.offset;
    const uint8_t* begin = w.data;
    const uint8_t* end = w.data + static_cast<size_t>(w.rows) * w.row_bytes;
    if (p.packed) {
      kernels::pack_weight(w, dst);
      w.packed = dst;
    } else {
      std::memcpy(dst, begin, p.bytes);
      w.data = dst;
    }
    // The kernels now read the copy: let the original pages go (they stay readable).
    release_pages(begin, end);
  }
  return memory;
}

void CpuBackend::execute(const std::function<void()>& pass) {
  kernels::run_in_team(pass);
}

Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace pagoda::backend
