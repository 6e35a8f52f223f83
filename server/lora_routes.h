// The LoRA endpoints (vLLM's): POST /v1/load_lora_adapter {"lora_name", "lora_path"} and
// POST /v1/unload_lora_adapter {"lora_name"}, both behind the API key like every non-public
// route; and the adapters' entries in /v1/models (id = the adapter's name, root = its path,
// parent = the base model's id). A request selects an adapter by naming it as its "model".
// Unloading an adapter that running requests use is refused (503 with Retry-After: try again
// when they finish); nothing is cut short.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "pagoda/engine.h"
#include "server/http_types.h"

namespace pagoda::server {

HttpResponse load_lora_adapter(Engine& engine, const std::string& body, int32_t max_json_depth);
HttpResponse unload_lora_adapter(Engine& engine, const std::string& body, int32_t max_json_depth);

// The /v1/models entry of a loaded adapter of model `parent`.
nlohmann::json lora_adapter_object(const LoraAdapterInfo& adapter, const std::string& parent,
                                   int64_t created);

}  // namespace pagoda::server
