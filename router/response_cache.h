// ResponseCache: answers of repeated identical requests, the ladder's level-4 "cached answers to
// frequent questions". Only deterministic requests qualify (cache_key() below); entries expire
// after ttl and the cache holds at most max_entries and max_bytes (keys + bodies), least recently
// used evicted first. Pure state with an injected clock; thread-safe (one mutex).
#pragma once

#include <chrono>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json_fwd.hpp>

#include "router/ladder_config.h"

namespace pagoda::router {

class ResponseCache {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  struct Entry {
    std::string content_type;
    std::string body;
  };

  explicit ResponseCache(CacheConfig config) : config_(config) {}
  void reconfigure(CacheConfig config);

  std::optional<Entry> get(const std::string& key, TimePoint now);
  // Stores (or replaces) an answer; one larger than max_entry_bytes is not stored.
  void put(const std::string& key, Entry entry, TimePoint now);

  size_t num_entries() const;
  uint64_t num_bytes() const;

 private:
  struct Item {
    std::string key;
    Entry entry;
    TimePoint expires;
  };
  void erase(std::list<Item>::iterator it);
  void shrink();

  mutable std::mutex mu_;
  CacheConfig config_;
  std::list<Item> lru_;  // front = most recently used
  std::unordered_map<std::string, std::list<Item>::iterator> index_;
  uint64_t bytes_ = 0;
};

// The cache key of a request, or nullopt if its answer must not be reused: only non-streamed
// requests with an explicit temperature 0 and one choice (n absent or 1; no best_of > 1) qualify.
// The key is the path, the API key and the canonical body (keys sorted, no whitespace: two
// spellings of the same request share it); `model` is the served model it goes to.
std::optional<std::string> cache_key(const std::string& path, const std::string& api_key,
                                     const std::string& model, const nlohmann::json& body);

}  // namespace pagoda::router
