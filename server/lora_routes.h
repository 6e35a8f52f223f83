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

// /v1/models entries for the loaded adapters.
nlohmann::json lora_model_objects(const Engine& engine, int64_t created);
// The /v1/models entry of adapter `name`, or null if no adapter has that name.
nlohmann::json lora_model_object(const Engine& engine, const std::string& name, int64_t created);

}  // namespace pagoda::server
