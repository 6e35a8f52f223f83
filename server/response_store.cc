#include "server/response_store.h"

namespace pagoda::server {

void ResponseStore::remove_locked(List::iterator it) {
  bytes_ -= it->bytes;
  id_to_entry_.erase(it->id);
  entries_.erase(it);
}

void ResponseStore::expire_locked(Clock::time_point now) {
  // Every entry lives for the same ttl, so the list is also ordered by expiry.
  while (!entries_.empty() && entries_.front().expires <= now)
    remove_locked(entries_.begin());
}

bool ResponseStore::put(const std::string& id, StoredResponse response, Clock::time_point now) {
  const size_t size = id.size() + response.response_json.size() + response.conversation_json.size();
  std::lock_guard<std::mutex> lock(mu_);
  expire_locked(now);
  if (auto it = id_to_entry_.find(id); it != id_to_entry_.end()) remove_locked(it->second);
  if (max_entries_ == 0 || size > max_bytes_) return false;
  while (!entries_.empty() && (entries_.size() >= max_entries_ || bytes_ + size > max_bytes_)) {
    remove_locked(entries_.begin());
  }
  entries_.push_back(Entry{id, std::move(response), now + ttl_, size});
  id_to_entry_[id] = std::prev(entries_.end());
  bytes_ += size;
  return true;
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  expire_locked(now);
  auto it = id_to_entry_.find(id);
  if (it == id_to_entry_.end()) return std::nullopt;
  return it->second->response;
}

bool ResponseStore::erase(const std::string& id, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  expire_locked(now);
  auto it = id_to_entry_.find(id);
  if (it == id_to_entry_.end()) return false;
  remove_locked(it->second);
  return true;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

}  // namespace pagoda::server
