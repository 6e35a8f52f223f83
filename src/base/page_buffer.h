// PageBuffer: anonymous memory for large, long-lived arrays (re-laid-out model weights, the KV
// cache). Zero-filled, 2 MiB aligned, and untouched pages cost no RAM.
//
// HugePages::kYes asks the kernel for transparent huge pages (MADV_HUGEPAGE; Debian's default THP
// mode, "madvise", only gives them to memory that asks). With 4 KiB pages the hardware
// prefetchers stop at every page boundary: on the Zen 3 VM a 2-thread sequential read reaches
// 14-17 GB/s on 4 KiB pages and 20-21 GB/s on huge pages, and decode is such a read of every
// weight per token. Memory that would otherwise be first touched while serving (the KV cache) is
// populated up front: with THP defrag "madvise" a huge-page fault may compact memory
// synchronously, which must not stall a request. PAGODA_HUGE_PAGES=0 turns huge pages off
// everywhere (A/B measurements).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace pagoda {

enum class HugePages { kNo, kYes };

class PageBuffer {
 public:
  // `bytes` of zeroed memory (0: an empty buffer with no mapping). Fails when the system cannot
  // map that much.
  static Result<PageBuffer> allocate(size_t bytes, HugePages huge);

  PageBuffer() = default;
  PageBuffer(PageBuffer&& other) noexcept;
  PageBuffer& operator=(PageBuffer&& other) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  ~PageBuffer();

  // Faults every page in now (MADV_POPULATE_WRITE; a write per page on kernels before 5.14), so
  // the memory is committed here: no page faults later, and a machine short of memory fails
  // here rather than in the middle of serving.
  Status populate();

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset();
  uint8_t* data_ = nullptr;  // 2 MiB aligned, inside [map_, map_ + map_bytes_)
  size_t size_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
};

}  // namespace pagoda
