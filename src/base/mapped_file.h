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

// Hands the pages of [begin, end) back to the kernel, for memory that was read once and is not
// needed again soon, e.g. weights already converted or re-laid-out. Inside one read-only private
// file mapping (a MappedFile): MADV_DONTNEED, which unmaps them from this process even when
// another process maps the same pages (the ranks of a tensor-parallel job read the same rows,
// and MADV_PAGEOUT skips pages mapped twice); elsewhere MADV_PAGEOUT (anonymous memory is kept
// or swapped). Purely advisory: the data stays readable (refaulted from the file or the page
// cache) and errors are ignored.
void release_pages(const uint8_t* begin, const uint8_t* end);

}  // namespace pagoda
