#include "base/page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

#include "base/checked_math.h"

namespace pagoda {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

bool huge_pages_enabled() {
  static const bool enabled = [] {
    const char* env = std::getenv("PAGODA_HUGE_PAGES");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return enabled;
}

}  // namespace

Result<PageBuffer> PageBuffer::allocate(size_t bytes, HugePages huge) {
  PageBuffer b;
  if (bytes == 0) return b;
  // Whole huge pages, plus one of slack to align the start.
  const auto rounded = checked_add<size_t>(bytes, 2 * kHugePage - 1);
  if (!rounded) return resource_exhausted("cannot map {} bytes", bytes);
  const size_t map_bytes = *rounded / kHugePage * kHugePage;
  void* p = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return resource_exhausted("cannot map {} bytes", bytes);
  b.map_ = p;
  b.map_bytes_ = map_bytes;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  b.data_ = reinterpret_cast<uint8_t*>((start + kHugePage - 1) / kHugePage * kHugePage);
  b.size_ = bytes;
#ifdef MADV_HUGEPAGE
  // Advisory: without THP support (or with THP "never") the memory keeps 4 KiB pages.
  if (huge == HugePages::kYes && huge_pages_enabled())
    ::madvise(b.data_, (bytes + kHugePage - 1) / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  return b;
}

Status PageBuffer::populate() {
  if (size_ == 0) return Status();
  const size_t bytes = (size_ + kHugePage - 1) / kHugePage * kHugePage;  // inside the mapping
#ifdef MADV_POPULATE_WRITE
  if (::madvise(data_, bytes, MADV_POPULATE_WRITE) == 0) return Status();
  if (errno != EINVAL) {  // EINVAL: a kernel older than 5.14; otherwise out of memory
    return resource_exhausted("cannot commit {} bytes of memory: {}", size_, std::strerror(errno));
  }
#endif
  // One write per 4 KiB page (the memory is zero already, so writing zero keeps it).
  for (size_t off = 0; off < bytes; off += 4096)
    static_cast<volatile uint8_t*>(data_)[off] = 0;
  return Status();
}

PageBuffer::PageBuffer(PageBuffer&& other) noexcept {
  *this = std::move(other);
}

PageBuffer& PageBuffer::operator=(PageBuffer&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    map_ = std::exchange(other.map_, nullptr);
    map_bytes_ = std::exchange(other.map_bytes_, 0);
  }
  return *this;
}

PageBuffer::~PageBuffer() {
  reset();
}

void PageBuffer::reset() {
  if (map_ != nullptr) ::munmap(map_, map_bytes_);
  map_ = nullptr;
  map_bytes_ = 0;
  data_ = nullptr;
  size_ = 0;
}

}  // namespace pagoda
