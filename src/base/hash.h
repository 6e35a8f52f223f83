// 128-bit non-cryptographic hashing (XXH3-128 from libxxhash): prefix-cache block keys and other
// content fingerprints. Stable across runs and machines for the same bytes (little-endian hosts).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

namespace pagoda {

struct Hash128 {
  uint64_t low = 0;
  uint64_t high = 0;
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

// XXH3-128 of `bytes` (seed 0).
Hash128 xxh3_128(std::span<const std::byte> bytes);
inline Hash128 xxh3_128(std::string_view s) {
  return xxh3_128(std::as_bytes(std::span<const char>(s.data(), s.size())));
}

// Streaming XXH3-128: update() any number of times, digest() gives the same value as one-shot
// xxh3_128 over the concatenation. Movable, not copyable.
class Hasher128 {
 public:
  Hasher128();
  ~Hasher128();
  Hasher128(Hasher128&&) noexcept;
  Hasher128& operator=(Hasher128&&) noexcept;

  void reset();
  void update(std::span<const std::byte> bytes);
  template <typename T>
  requires std::is_trivially_copyable_v<T>
  void update_values(std::span<const T> values) { update(std::as_bytes(values)); }
  void update(const Hash128& h);
  Hash128 digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// For unordered containers keyed by a Hash128 (already uniformly distributed).
struct Hash128Hasher {
  size_t operator()(const Hash128& h) const noexcept { return static_cast<size_t>(h.low); }
};

}  // namespace pagoda
