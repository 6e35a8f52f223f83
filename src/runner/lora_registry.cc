#include "runner/lora_registry.h"

namespace pagoda::runner {

Result<uint32_t> LoraRegistry::add(std::shared_ptr<const model::LoraAdapter> adapter,
                                   std::string path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (by_name_.count(adapter->name) != 0) {
    return invalid_argument("LoRA adapter \"{}\" is already loaded", adapter->name);
  }
  if (static_cast<int64_t>(by_name_.size()) >= max_loras_) {
    return resource_exhausted(
        "{} LoRA adapters are loaded, the most --max-loras ({}) allows; unload one first",
        by_name_.size(), max_loras_);
  }
  const uint32_t id = next_id_++;
  by_id_[id] = adapter;
  const std::string name = adapter->name;
  id_to_name_[id] = name;
  by_name_[name] = Slot{std::move(adapter), std::move(path), id, 0};
  return id;
}

Result<uint32_t> LoraRegistry::acquire(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return not_found("LoRA adapter \"{}\" is not loaded", name);
  ++it->second.num_users;
  return it->second.id;
}

void LoraRegistry::release(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto name = id_to_name_.find(id);
  if (name == id_to_name_.end()) return;
  auto it = by_name_.find(name->second);
  if (it != by_name_.end() && it->second.id == id && it->second.num_users > 0) {
    --it->second.num_users;
  }
}

Status LoraRegistry::remove(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return not_found("LoRA adapter \"{}\" is not loaded", name);
  if (it->second.num_users > 0) {
    return failed_precondition(
        "LoRA adapter \"{}\" has {} running requests; unload it when they "
        "finish",
        name, it->second.num_users);
  }
  by_id_.erase(it->second.id);
  id_to_name_.erase(it->second.id);
  by_name_.erase(it);
  return Status();
}

std::shared_ptr<const model::LoraAdapter> LoraRegistry::find(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : it->second;
}

bool LoraRegistry::contains(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  return by_name_.find(name) != by_name_.end();
}

std::vector<LoraRegistry::Entry> LoraRegistry::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Entry> out;
  for (const auto& [name, slot] : by_name_)
    out.push_back(Entry{name, slot.path, slot.id, slot.adapter->rank});
  return out;
}

}  // namespace pagoda::runner
