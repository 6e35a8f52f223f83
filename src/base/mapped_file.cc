#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace pagoda {

namespace {

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "not a regular file";
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  // Only a regular file is opened: opening a FIFO for reading blocks until a writer comes, a
  // character device may never end. Checked before the open (stat follows symlinks), and again
  // on the descriptor (opened non-blocking, so a file swapped for a FIFO in between cannot hang).
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0) {
    int err = errno;
    if (err == ENOENT) return not_found("{}: no such file", path);
    return io_error("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (!S_ISREG(before.st_mode)) {
    return invalid_argument("{}: is {}, not a regular file", path, file_kind(before.st_mode));
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT) return not_found("{}: no such file", path);
    return io_error("{}: cannot open: {}", path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return io_error("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument("{}: is {}, not a regular file", path, file_kind(st.st_mode));
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return io_error("{}: mmap failed: {}", path, std::strerror(err));
    }
    f.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return f;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), path_(std::move(other.path_)) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    path_ = std::move(other.path_);
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  reset();
}

void MappedFile::reset() {
  if (data_ != nullptr && size_ > 0) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

namespace {

// True when [begin, end) lies inside one mapping of /proc/self/maps that is a read-only,
// private mapping of a file (where dropping a page only means refaulting it from the file).
bool in_read_only_file_mapping(uintptr_t begin, uintptr_t end) {
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return false;
  bool found = false;
  char line[512];
  while (!found && std::fgets(line, sizeof(line), maps) != nullptr) {
    uintmax_t lo = 0, hi = 0, offset = 0, inode = 0;
    char perms[8] = {}, dev[16] = {};
    if (std::sscanf(line, "%jx-%jx %7s %jx %15s %ju", &lo, &hi, perms, &offset, dev, &inode) != 6) {
      continue;
    }
    if (begin < lo || begin >= hi) continue;
    found = end <= hi && perms[0] == 'r' && perms[1] == '-' && perms[3] == 'p' && inode != 0;
    break;
  }
  std::fclose(maps);
  return found;
}

}  // namespace

void release_pages(const uint8_t* begin, const uint8_t* end) {
#ifdef MADV_PAGEOUT
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t b = reinterpret_cast<uintptr_t>(begin) / page * page;
  const uintptr_t e = reinterpret_cast<uintptr_t>(end) / page * page;
  if (e <= b) return;
  // (b and e stay inside the mapping: it starts on a page, and e is rounded down.)
  if (in_read_only_file_mapping(b, e)) {
    madvise(reinterpret_cast<void*>(b), e - b, MADV_DONTNEED);
    return;
  }
  madvise(reinterpret_cast<void*>(b), e - b, MADV_PAGEOUT);
#else
  (void)begin;
  (void)end;
#endif
}

}  // namespace pagoda
