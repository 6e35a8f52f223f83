#include "format/lora_adapter_config.h"

#include <cmath>

#include "base/strict_json.h"
#include "format/gguf_file.h"
#include "format/json_fields.h"

namespace pagoda::format {
namespace {
constexpr std::string_view kFile = "adapter_config.json";
}

double LoraAdapterConfig::scale(int64_t r) const {
  if (architecture.empty()) {  // PEFT
    return use_rslora ? alpha / std::sqrt(static_cast<double>(r)) : alpha / static_cast<double>(r);
  }
  return alpha != 0 ? alpha / static_cast<double>(r) : 1.0;  // llama.cpp's rule
}

Result<LoraAdapterConfig> parse_peft_lora_config(std::string_view text) {
  PAGODA_ASSIGN_OR_RETURN(nlohmann::json root, parse_strict_json(text, kFile));
  if (!root.is_object()) return invalid_argument("{}: not a JSON object", kFile);
  const Fields f(root, kFile);
  LoraAdapterConfig c;
  std::optional<std::string> peft_type, bias;
  PAGODA_RETURN_IF_ERROR(f.read("peft_type", peft_type));
  if (peft_type && *peft_type != "LORA") {
    return unimplemented("{}: peft_type is {}, not \"LORA\"", kFile, shorten(*peft_type));
  }
  std::optional<int64_t> r;
  PAGODA_RETURN_IF_ERROR(f.read("r", r));
  if (!r) return invalid_argument("{}: r (the rank) is missing", kFile);
  if (*r < 1 || *r > kMaxLoraRank) {
    return invalid_argument("{}: r is {}, not a rank in [1, {}]", kFile, *r, kMaxLoraRank);
  }
  c.rank = *r;
  std::optional<double> alpha;
  PAGODA_RETURN_IF_ERROR(f.read("lora_alpha", alpha));
  if (!alpha) return invalid_argument("{}: lora_alpha is missing", kFile);
  if (!std::isfinite(*alpha) || std::fabs(*alpha) > 1e6) {
    return invalid_argument("{}: lora_alpha is {}, not a finite number within 1e6", kFile, *alpha);
  }
  c.alpha = *alpha;
  std::optional<bool> rslora, fan_in_fan_out, dora;
  PAGODA_RETURN_IF_ERROR(f.read("use_rslora", rslora));
  c.use_rslora = rslora.value_or(false);
  PAGODA_RETURN_IF_ERROR(f.read("fan_in_fan_out", fan_in_fan_out));
  if (fan_in_fan_out.value_or(false)) {
    return unimplemented("{}: fan_in_fan_out true (Conv1D base layers) is not supported", kFile);
  }
  PAGODA_RETURN_IF_ERROR(f.read("use_dora", dora));
  if (dora.value_or(false)) return unimplemented("{}: use_dora (DoRA) is not supported", kFile);
  PAGODA_RETURN_IF_ERROR(f.read("bias", bias));
  if (bias && *bias != "none") {
    return unimplemented("{}: bias {} is not supported (only \"none\")", kFile, shorten(*bias));
  }
  for (const char* key : {"modules_to_save", "layers_to_transform", "layer_replication"}) {
    const nlohmann::json* v = f.get(key);
    if (v != nullptr && !(v->is_array() && v->empty())) {
      return unimplemented("{}: {} is not supported", kFile, key);
    }
  }
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    const nlohmann::json* v = f.get(key);
    if (v != nullptr && !(v->is_object() && v->empty())) {
      return unimplemented("{}: {} (per-module ranks) is not supported", kFile, key);
    }
  }
  const nlohmann::json* targets = f.get("target_modules");
  if (targets == nullptr) return invalid_argument("{}: target_modules is missing", kFile);
  if (targets->is_string()) {
    return unimplemented("{}: target_modules as a regex string is not supported; list the modules",
                         kFile);
  }
  PAGODA_RETURN_IF_ERROR(f.read("target_modules", c.target_modules));
  if (c.target_modules.empty()) return invalid_argument("{}: target_modules is empty", kFile);
  return c;
}

Result<LoraAdapterConfig> read_gguf_lora_config(const GgufFile& file) {
  PAGODA_ASSIGN_OR_RETURN(std::string_view type, file.get_string("general.type"));
  if (type != "adapter") {
    return invalid_argument("general.type is {}, not \"adapter\"", shorten(std::string(type)));
  }
  PAGODA_ASSIGN_OR_RETURN(std::string_view adapter_type, file.get_string("adapter.type"));
  if (adapter_type != "lora") {
    return unimplemented("adapter.type is {}, not \"lora\"", shorten(std::string(adapter_type)));
  }
  LoraAdapterConfig c;
  PAGODA_ASSIGN_OR_RETURN(std::string_view arch, file.get_string("general.architecture"));
  if (arch.empty()) return invalid_argument("general.architecture is empty");
  c.architecture = std::string(arch);
  if (file.find("adapter.lora.alpha") != nullptr) {
    PAGODA_ASSIGN_OR_RETURN(c.alpha, file.get_float("adapter.lora.alpha"));
    if (!std::isfinite(c.alpha) || std::fabs(c.alpha) > 1e6) {
      return invalid_argument("adapter.lora.alpha is {}, not a finite number within 1e6", c.alpha);
    }
  }
  return c;
}

}  // namespace pagoda::format
