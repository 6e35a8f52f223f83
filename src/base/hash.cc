// XXH3-128 wrappers over libxxhash.
#include "base/hash.h"

#include <xxhash.h>

#include "base/check.h"

namespace pagoda {

namespace {
Hash128 from_xxh(XXH128_hash_t h) {
  return Hash128{h.low64, h.high64};
}
}  // namespace

Hash128 xxh3_128(std::span<const std::byte> bytes) {
  return from_xxh(XXH3_128bits(bytes.data(), bytes.size()));
}

struct Hasher128::State {
  XXH3_state_t* s = nullptr;
};

Hasher128::Hasher128() : state_(std::make_unique<State>()) {
  state_->s = XXH3_createState();
  PAGODA_CHECK_MSG(state_->s != nullptr, "XXH3_createState failed (out of memory)");
  reset();
}

Hasher128::~Hasher128() {
  if (state_ != nullptr) XXH3_freeState(state_->s);
}

Hasher128::Hasher128(Hasher128&&) noexcept = default;

Hasher128& Hasher128::operator=(Hasher128&& other) noexcept {
  if (this != &other) {
    if (state_ != nullptr) XXH3_freeState(state_->s);
    state_ = std::move(other.state_);
  }
  return *this;
}

void Hasher128::reset() {
  PAGODA_CHECK(state_ != nullptr);
  XXH3_128bits_reset(state_->s);
}

void Hasher128::update(std::span<const std::byte> bytes) {
  PAGODA_CHECK(state_ != nullptr);
  if (bytes.empty()) return;
  XXH3_128bits_update(state_->s, bytes.data(), bytes.size());
}

void Hasher128::update(const Hash128& h) {
  const uint64_t words[2] = {h.low, h.high};
  update(std::as_bytes(std::span<const uint64_t>(words)));
}

Hash128 Hasher128::digest() const {
  PAGODA_CHECK(state_ != nullptr);
  return from_xxh(XXH3_128bits_digest(state_->s));
}

}  // namespace pagoda
