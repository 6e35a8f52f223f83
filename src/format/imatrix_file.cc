#include "format/imatrix_file.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include "base/mapped_file.h"

namespace pagoda::format {
namespace {

constexpr int32_t kMaxNameLen = 4096;

class Cursor {
 public:
  explicit Cursor(std::span<const uint8_t> b) : b_(b) {}
  size_t left() const { return b_.size() - off_; }
  bool i32(int32_t& v) {
    if (left() < 4) return false;
    std::memcpy(&v, b_.data() + off_, 4);
    off_ += 4;
    return true;
  }
  bool bytes(size_t n, const uint8_t*& p) {
    if (left() < n) return false;
    p = b_.data() + off_;
    off_ += n;
    return true;
  }

 private:
  std::span<const uint8_t> b_;
  size_t off_ = 0;
};

}  // namespace

const ImatrixEntry* Imatrix::find(std::string_view name) const {
  for (const ImatrixEntry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

Result<Imatrix> parse_imatrix(std::span<const uint8_t> bytes) {
  Cursor c(bytes);
  int32_t n = 0;
  if (!c.i32(n)) return invalid_argument("imatrix: file too short for n_entries");
  // Each entry takes at least 13 bytes (three i32 and a 1-byte name).
  if (n <= 0 || static_cast<size_t>(n) > c.left() / 13) {
    return invalid_argument("imatrix: n_entries {} does not fit the file", n);
  }
  Imatrix m;
  m.entries.reserve(static_cast<size_t>(n));
  std::unordered_set<std::string> names;
  for (int32_t i = 0; i < n; ++i) {
    int32_t len = 0, ncall = 0, nval = 0;
    const uint8_t* p = nullptr;
    if (!c.i32(len) || len <= 0 || len > kMaxNameLen || !c.bytes(static_cast<size_t>(len), p)) {
      return invalid_argument("imatrix: entry {}: bad name length {}", i, len);
    }
    ImatrixEntry e;
    e.name.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    if (!names.insert(e.name).second) {
      return invalid_argument("imatrix: entry '{}' appears twice", e.name);
    }
    if (!c.i32(ncall) || ncall <= 0) {
      return invalid_argument("imatrix: entry '{}': ncall {} must be positive", e.name, ncall);
    }
    if (!c.i32(nval) || nval <= 0 || static_cast<size_t>(nval) > c.left() / 4) {
      return invalid_argument("imatrix: entry '{}': nval {} does not fit the file", e.name, nval);
    }
    c.bytes(static_cast<size_t>(nval) * 4, p);
    e.ncall = ncall;
    e.values.resize(static_cast<size_t>(nval));
    std::memcpy(e.values.data(), p, static_cast<size_t>(nval) * 4);
    for (float& v : e.values) {
      if (!std::isfinite(v) || v < 0) {
        return invalid_argument("imatrix: entry '{}' holds a negative or non-finite value", e.name);
      }
      v /= static_cast<float>(ncall);
    }
    m.entries.push_back(std::move(e));
  }
  if (c.left() == 0) return m;
  int32_t len = 0;
  const uint8_t* p = nullptr;
  if (!c.i32(m.last_call) || !c.i32(len) || len < 0 || static_cast<size_t>(len) != c.left() ||
      !c.bytes(static_cast<size_t>(len), p)) {
    return invalid_argument("imatrix: malformed trailer (last_call, dataset name)");
  }
  m.dataset.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
  return m;
}

Result<Imatrix> read_imatrix(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  auto m = parse_imatrix(file.bytes());
  if (!m.ok()) return m.status().with_context(path);
  return m;
}

Status write_imatrix(const std::string& path, const Imatrix& m) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return io_error("cannot create {}: {}", path, std::strerror(errno));
  bool ok = true;
  const auto put = [&](const void* p, size_t n) { ok = ok && std::fwrite(p, 1, n, f) == n; };
  const auto put_i32 = [&](int32_t v) { put(&v, 4); };
  put_i32(static_cast<int32_t>(m.entries.size()));
  std::vector<float> tmp;
  for (const ImatrixEntry& e : m.entries) {
    put_i32(static_cast<int32_t>(e.name.size()));
    put(e.name.data(), e.name.size());
    put_i32(e.ncall);
    put_i32(static_cast<int32_t>(e.values.size()));
    tmp.resize(e.values.size());
    for (size_t i = 0; i < tmp.size(); ++i)
      tmp[i] = e.values[i] * static_cast<float>(e.ncall);
    put(tmp.data(), tmp.size() * 4);
  }
  put_i32(m.last_call);
  put_i32(static_cast<int32_t>(m.dataset.size()));
  put(m.dataset.data(), m.dataset.size());
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return io_error("cannot write {}: {}", path, std::strerror(errno));
  return Status();
}

}  // namespace pagoda::format
