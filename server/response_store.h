// ResponseStore: the Responses API's stored responses (`store: true`, the default), for
// GET / DELETE /v1/responses/{id} and for continuing a conversation with previous_response_id.
// In memory and bounded: at most max_entries responses and max_bytes of their text, each kept
// for ttl after it was stored; the oldest go first when a new one needs room. Thread-safe (every
// connection's strand uses it).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace pagoda::server {

struct StoredResponse {
  std::string response_json;      // the response object as GET returns it
  std::string conversation_json;  // the chat messages so far (input + output), a JSON list
};

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;

  ResponseStore(size_t max_entries, size_t max_bytes, std::chrono::seconds ttl)
      : max_entries_(max_entries), max_bytes_(max_bytes), ttl_(ttl) {}

  // Stores (or replaces) `id`. A response larger than max_bytes on its own is not stored
  // (returns false); older entries are evicted to make room.
  bool put(const std::string& id, StoredResponse response, Clock::time_point now = Clock::now());
  // The live response `id`, if stored and not expired.
  std::optional<StoredResponse> get(const std::string& id, Clock::time_point now = Clock::now());
  // Removes `id`; false when absent or expired.
  bool erase(const std::string& id, Clock::time_point now = Clock::now());

  size_t size() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::string id;
    StoredResponse response;
    Clock::time_point expires;
    size_t bytes = 0;
  };
  using List = std::list<Entry>;  // oldest first

  void expire_locked(Clock::time_point now);
  void remove_locked(List::iterator it);

  const size_t max_entries_;
  const size_t max_bytes_;
  const std::chrono::seconds ttl_;
  mutable std::mutex mu_;
  List entries_;
  std::unordered_map<std::string, List::iterator> id_to_entry_;
  size_t bytes_ = 0;
};

}  // namespace pagoda::server
