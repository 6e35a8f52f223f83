// KV cache sizing for Engine::create: the max_model_len in effect, the byte budget
// (EngineConfig::kv_cache_bytes, or kv_cache_fraction of the RAM /proc/meminfo reports as
// MemAvailable) and the cache dtype name.
// Pure functions over their inputs so they test without touching the machine.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "tensor/dtype.h"

namespace pagoda::api {

// The max_model_len in effect: `requested`, 0 meaning the model's context_length; above it,
// lowered to it when `clamp`, else invalid_argument; at least 2. Rank 0's engine and every
// worker of a parallel job resolve it alike (a LongRoPE model's table depends on it:
// model::Model::set_served_context).
Result<int32_t> resolve_max_model_len(int32_t requested, bool clamp, int32_t context_length);

// "f16" | "bf16" | "q8_0" | "f32" (case-insensitive). invalid_argument names kv_cache_dtype.
Result<tensor::DType> parse_kv_cache_dtype(std::string_view name);

// MemAvailable from the text of /proc/meminfo ("MemAvailable:   21892340 kB"), in bytes.
// invalid_argument if the line is missing or malformed.
Result<uint64_t> parse_mem_available(std::string_view meminfo);

// Reads /proc/meminfo (io_error if unreadable).
Result<uint64_t> read_mem_available();

// The bytes to give the KV cache: `kv_cache_bytes` when non-zero, else
// kv_cache_fraction * mem_available. invalid_argument for a fraction outside (0, 1].
Result<uint64_t> kv_cache_budget(uint64_t kv_cache_bytes, double kv_cache_fraction,
                                 uint64_t mem_available);

}  // namespace pagoda::api
