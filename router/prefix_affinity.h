// Prefix affinity: requests whose prompts start the same go to the same replica, so its prefix
// cache hits. The key hashes the first `prefix_chars` characters of the prompt (completions) or
// of the chat prefix: the leading system/developer messages, then the first other message
// unless it is the newest turn (a lone message counts), role and text content of each; the replica
// is chosen by rendezvous hashing (highest xxh3(key, name) wins: when a replica leaves, only its
// keys move) with bounded load (Mirrokni et al., "Consistent Hashing with Bounded Loads": a replica
// is skipped while its outstanding requests would exceed ceil(load_factor * (all outstanding + 1) /
// replicas)).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace pagoda::router {

// nullopt when the body has no prompt or messages to key on.
std::optional<uint64_t> affinity_key(const nlohmann::json& body, size_t prefix_chars);

// The rendezvous weight of `backend` for `key`.
uint64_t rendezvous_score(uint64_t key, std::string_view backend);

}  // namespace pagoda::router
