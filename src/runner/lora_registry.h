// LoraRegistry: the LoRA adapters an engine serves, by name and by id. Ids are never reused (an
// adapter unloaded and loaded again under the same name gets a new one), so prefix-cache blocks,
// keyed by id, never mix two adapters. Requests hold their adapter (acquire .. release); an
// adapter with requests still running is not unloaded (remove refuses with failed_precondition).
// Thread-safe: the server adds and removes while the step loop looks adapters up.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "model/lora.h"

namespace pagoda::runner {

class LoraRegistry {
 public:
  explicit LoraRegistry(int32_t max_loras) : max_loras_(max_loras) {}

  // Adds the adapter under adapter->name; invalid_argument if the name is taken, resource_exhausted
  // when max_loras adapters are loaded. Returns its id (>= 1).
  Result<uint32_t> add(std::shared_ptr<const model::LoraAdapter> adapter, std::string path);
  // The id of `name` with one more request holding it; not_found for an unknown name.
  Result<uint32_t> acquire(std::string_view name);
  void release(uint32_t id);
  // Unloads `name`: not_found if unknown, failed_precondition while requests hold it.
  Status remove(std::string_view name);
  // The adapter with id `id`, or null.
  std::shared_ptr<const model::LoraAdapter> find(uint32_t id) const;
  bool contains(std::string_view name) const;

  struct Entry {
    std::string name;
    std::string path;
    uint32_t id = 0;
    int32_t rank = 0;
  };
  // Loaded adapters, by name.
  std::vector<Entry> list() const;

 private:
  struct Slot {
    std::shared_ptr<const model::LoraAdapter> adapter;
    std::string path;
    uint32_t id = 0;
    int64_t num_users = 0;
  };
  const int32_t max_loras_;
  mutable std::mutex mu_;
  std::map<std::string, Slot, std::less<>> by_name_;
  std::unordered_map<uint32_t, std::shared_ptr<const model::LoraAdapter>> by_id_;
  std::unordered_map<uint32_t, std::string> id_to_name_;
  uint32_t next_id_ = 1;
};

}  // namespace pagoda::runner
