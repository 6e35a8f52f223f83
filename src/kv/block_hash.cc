// Chained XXH3-128 block keys (see block_hash.h for the exact byte layout).
#include "kv/block_hash.h"

#include <array>
#include <cstring>
#include <random>
#include <string>

#include "base/check.h"

namespace pagoda::kv {

const std::array<uint64_t, 2>& process_hash_secret() {
  static const std::array<uint64_t, 2> secret = [] {
    std::random_device rd;
    std::array<uint64_t, 2> s{};
    for (uint64_t& w : s)
      w = (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
    return s;
  }();
  return secret;
}

BlockHash root_block_hash(std::string_view cache_salt, uint32_t lora_id) {
  const std::array<uint64_t, 2>& secret = process_hash_secret();
  std::string buf = lora_id != 0         ? "pagoda.kv.lora"
                    : cache_salt.empty() ? "pagoda.kv.root"
                                         : "pagoda.kv.salt";
  buf.append(reinterpret_cast<const char*>(secret.data()), sizeof(secret));
  if (lora_id != 0) buf.append(reinterpret_cast<const char*>(&lora_id), sizeof(lora_id));
  if (cache_salt.empty() && lora_id == 0) return xxh3_128(buf);
  const uint64_t len = cache_salt.size();
  buf.append(reinterpret_cast<const char*>(&len), sizeof(len));
  buf.append(cache_salt);
  return xxh3_128(buf);
}

BlockHash hash_block(const BlockHash& parent, std::span<const TokenId> tokens,
                     std::span<const uint64_t> extra_keys) {
  const size_t size = 2 * sizeof(uint64_t) + tokens.size_bytes() + extra_keys.size_bytes();
  // Common block sizes fit on the stack; larger ones fall back to the heap.
  std::array<std::byte, 1024> stack;
  std::vector<std::byte> heap;
  std::byte* buf = stack.data();
  if (size > stack.size()) {
    heap.resize(size);
    buf = heap.data();
  }
  size_t at = 0;
  std::memcpy(buf + at, &parent.low, sizeof(uint64_t));
  at += sizeof(uint64_t);
  std::memcpy(buf + at, &parent.high, sizeof(uint64_t));
  at += sizeof(uint64_t);
  if (!tokens.empty()) std::memcpy(buf + at, tokens.data(), tokens.size_bytes());
  at += tokens.size_bytes();
  if (!extra_keys.empty()) std::memcpy(buf + at, extra_keys.data(), extra_keys.size_bytes());
  at += extra_keys.size_bytes();
  return xxh3_128(std::span<const std::byte>(buf, at));
}

void extend_block_hashes(std::vector<BlockHash>& hashes, std::span<const TokenId> tokens,
                         int32_t block_size, int64_t num_blocks, std::string_view cache_salt,
                         uint32_t lora_id) {
  PAGODA_CHECK(block_size > 0);
  PAGODA_CHECK(num_blocks * block_size <= static_cast<int64_t>(tokens.size()));
  if (static_cast<int64_t>(hashes.size()) >= num_blocks) return;
  BlockHash parent = hashes.empty() ? root_block_hash(cache_salt, lora_id) : hashes.back();
  hashes.reserve(num_blocks);
  for (int64_t i = static_cast<int64_t>(hashes.size()); i < num_blocks; ++i) {
    parent = hash_block(parent, tokens.subspan(i * block_size, block_size));
    hashes.push_back(parent);
  }
}

}  // namespace pagoda::kv
