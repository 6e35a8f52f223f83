#include "router/response_cache.h"

#include <nlohmann/json.hpp>

namespace pagoda::router {

void ResponseCache::reconfigure(CacheConfig config) {
  std::lock_guard lock(mu_);
  config_ = config;
  shrink();
}

void ResponseCache::erase(std::list<Item>::iterator it) {
  bytes_ -= it->key.size() + it->entry.body.size() + it->entry.content_type.size();
  index_.erase(it->key);
  lru_.erase(it);
}

void ResponseCache::shrink() {
  while (!lru_.empty() && (lru_.size() > config_.max_entries || bytes_ > config_.max_bytes))
    erase(std::prev(lru_.end()));
}

std::optional<ResponseCache::Entry> ResponseCache::get(const std::string& key, TimePoint now) {
  std::lock_guard lock(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  if (now >= it->second->expires) {
    erase(it->second);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->entry;
}

void ResponseCache::put(const std::string& key, Entry entry, TimePoint now) {
  const uint64_t size = key.size() + entry.body.size() + entry.content_type.size();
  std::lock_guard lock(mu_);
  if (config_.max_entries == 0 || entry.body.size() > config_.max_entry_bytes ||
      size > config_.max_bytes) {
    return;
  }
  if (auto it = index_.find(key); it != index_.end()) erase(it->second);
  lru_.push_front({key, std::move(entry), now + std::chrono::milliseconds(config_.ttl_ms)});
  index_[key] = lru_.begin();
  bytes_ += size;
  shrink();
}

size_t ResponseCache::num_entries() const {
  std::lock_guard lock(mu_);
  return lru_.size();
}

uint64_t ResponseCache::num_bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

std::optional<std::string> cache_key(const std::string& path, const std::string& api_key,
                                     const std::string& model, const nlohmann::json& body) {
  if (!body.is_object()) return std::nullopt;
  auto stream = body.find("stream");
  if (stream != body.end() && !(stream->is_boolean() && !stream->get<bool>()) &&
      !stream->is_null()) {
    return std::nullopt;
  }
  auto temp = body.find("temperature");
  if (temp == body.end() || !temp->is_number() || temp->get<double>() != 0.0) return std::nullopt;
  for (const char* field : {"n", "best_of"}) {
    auto it = body.find(field);
    if (it != body.end() && !it->is_null() &&
        !(it->is_number_integer() && it->get<int64_t>() == 1)) {
      return std::nullopt;
    }
  }
  // nlohmann's object is a std::map: dump() writes the keys sorted, so the body is canonical.
  std::string key = path;
  key += '\n';
  key += api_key;
  key += '\n';
  key += model;
  key += '\n';
  key += body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return key;
}

}  // namespace pagoda::router
