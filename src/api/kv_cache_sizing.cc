// KV cache budget and dtype parsing (see kv_cache_sizing.h).
#include "api/kv_cache_sizing.h"

#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include "base/checked_math.h"

namespace pagoda::api {

Result<tensor::DType> parse_kv_cache_dtype(std::string_view name) {
  std::string lower;
  for (const char c : name)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  if (lower == "f16" || lower == "fp16" || lower == "float16") return tensor::DType::kF16;
  if (lower == "bf16" || lower == "bfloat16") return tensor::DType::kBF16;
  if (lower == "q8_0") return tensor::DType::kQ8_0;
  if (lower == "f32" || lower == "fp32" || lower == "float32") return tensor::DType::kF32;
  return invalid_argument("kv_cache_dtype must be one of f16, bf16, q8_0, f32; got '{}'", name);
}

Result<uint64_t> parse_mem_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  size_t pos = 0;
  while (pos < meminfo.size()) {
    size_t end = meminfo.find('\n', pos);
    if (end == std::string_view::npos) end = meminfo.size();
    const std::string_view line = meminfo.substr(pos, end - pos);
    pos = end + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    size_t i = kKey.size();
    while (i < line.size() && line[i] == ' ')
      ++i;
    uint64_t value = 0;
    size_t digits = 0;
    for (; i < line.size() && std::isdigit(static_cast<unsigned char>(line[i])); ++i, ++digits) {
      if (value > (UINT64_MAX - 9) / 10) {
        return invalid_argument("/proc/meminfo MemAvailable overflows");
      }
      value = value * 10 + static_cast<uint64_t>(line[i] - '0');
    }
    if (digits == 0) return invalid_argument("/proc/meminfo MemAvailable has no number");
    while (i < line.size() && line[i] == ' ')
      ++i;
    const std::string_view unit = line.substr(i);
    uint64_t scale = 1;
    if (unit == "kB") {
      scale = 1024;
    } else if (!unit.empty()) {
      return invalid_argument("/proc/meminfo MemAvailable has unknown unit '{}'", unit);
    }
    const auto bytes = checked_mul<uint64_t>(value, scale);
    if (!bytes) return invalid_argument("/proc/meminfo MemAvailable overflows");
    return *bytes;
  }
  return invalid_argument("/proc/meminfo has no MemAvailable line");
}

Result<uint64_t> read_mem_available() {
  std::ifstream in("/proc/meminfo");
  if (!in) return io_error("cannot read /proc/meminfo");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_mem_available(ss.str());
}

Result<int32_t> resolve_max_model_len(int32_t requested, bool clamp, int32_t context_length) {
  if (requested < 0) return invalid_argument("max_model_len must be >= 0, got {}", requested);
  int32_t max_model_len = requested == 0 ? context_length : requested;
  if (context_length > 0 && max_model_len > context_length) {
    if (!clamp) {
      return invalid_argument("max_model_len ({}) exceeds the model's context length ({})",
                              max_model_len, context_length);
    }
    max_model_len = context_length;
  }
  if (max_model_len < 2) {
    return invalid_argument("max_model_len must be >= 2, got {}", max_model_len);
  }
  return max_model_len;
}

Result<uint64_t> kv_cache_budget(uint64_t kv_cache_bytes, double kv_cache_fraction,
                                 uint64_t mem_available) {
  if (kv_cache_bytes > 0) return kv_cache_bytes;
  if (!std::isfinite(kv_cache_fraction) || kv_cache_fraction <= 0 || kv_cache_fraction > 1) {
    return invalid_argument("kv_cache_fraction must be in (0, 1], got {}", kv_cache_fraction);
  }
  return static_cast<uint64_t>(static_cast<long double>(mem_available) * kv_cache_fraction);
}

}  // namespace pagoda::api
