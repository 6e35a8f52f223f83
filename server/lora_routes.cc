#include "server/lora_routes.h"

#include "server/api_error.h"
#include "server/http_responses.h"
#include "server/openai_request.h"

namespace pagoda::server {
namespace {
using nlohmann::json;

// The body's string fields `names` (each required, 1..4096 bytes); any other key is refused.
std::optional<ApiError> read_fields(const std::string& body, int32_t max_depth,
                                    std::initializer_list<const char*> names,
                                    std::vector<std::string>& out) {
  json j;
  if (auto err = parse_json_object(body, max_depth, j)) return err;
  for (const auto& [key, value] : j.items()) {
    bool known = false;
    for (const char* n : names)
      known = known || key == n;
    if (!known) return bad_request("Unsupported field '" + key.substr(0, 64) + "'", key);
  }
  for (const char* n : names) {
    auto it = j.find(n);
    if (it == j.end() || !it->is_string()) {
      return bad_request(std::string("'") + n + "' is required and must be a string", n);
    }
    const std::string& s = it->get_ref<const std::string&>();
    if (s.empty() || s.size() > 4096) {
      return bad_request(std::string("'") + n + "' must be 1 to 4096 characters", n);
    }
    out.push_back(s);
  }
  return std::nullopt;
}

}  // namespace

HttpResponse load_lora_adapter(Engine& engine, const std::string& body, int32_t max_json_depth) {
  std::vector<std::string> f;
  if (auto err = read_fields(body, max_json_depth, {"lora_name", "lora_path"}, f)) {
    return error_response(*err);
  }
  const Status st = engine.load_lora_adapter(f[0], f[1]);
  if (st.code() == StatusCode::kResourceExhausted) {
    // --max-loras reached: the request is refused as it stands (vLLM answers a failed load with a
    // 400), not a full queue that a retry would get through (from_status's 429).
    ApiError e = bad_request(st.message(), "lora_name");
    e.code = "max_loras_reached";
    return error_response(e);
  }
  if (!st.ok()) {
    const bool name_error = st.message().find("lora_name") != std::string::npos ||
                            st.message().find("already loaded") != std::string::npos;
    return error_response(from_status(st, name_error ? "lora_name" : "lora_path"));
  }
  return json_response(
      json{{"object", "lora_adapter"},
           {"lora_name", f[0]},
           {"message", "Success: LoRA adapter '" + f[0] + "' added successfully."}});
}

HttpResponse unload_lora_adapter(Engine& engine, const std::string& body, int32_t max_json_depth) {
  std::vector<std::string> f;
  if (auto err = read_fields(body, max_json_depth, {"lora_name"}, f)) return error_response(*err);
  const Status st = engine.unload_lora_adapter(f[0]);
  if (!st.ok()) return error_response(from_status(st, "lora_name"));
  return json_response(
      json{{"object", "lora_adapter"},
           {"lora_name", f[0]},
           {"message", "Success: LoRA adapter '" + f[0] + "' removed successfully."}});
}

json lora_adapter_object(const LoraAdapterInfo& a, const std::string& parent, int64_t created) {
  return json{
      {"id", a.name},   {"object", "model"}, {"created", created},  {"owned_by", "pagoda"},
      {"root", a.path}, {"parent", parent},  {"lora_rank", a.rank}, {"permission", json::array()}};
}

}  // namespace pagoda::server
