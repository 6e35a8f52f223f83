// A read-only memory map of a whole file (model weights are mmapped, not read into buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "base/status.h"

namespace pagoda {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to an empty span.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Hands the pages of [begin, end) back to the kernel (MADV_PAGEOUT: clean file pages are dropped
// from this process, anonymous memory is kept or swapped), for memory that was read once and is
// not needed again soon, e.g. weights already converted or re-laid-out. Purely advisory: the
// data stays readable (refaulted from the file) and errors are ignored.
void release_pages(const uint8_t* begin, const uint8_t* end);

}  // namespace pagoda
