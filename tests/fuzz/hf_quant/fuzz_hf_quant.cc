// libFuzzer target: config.json's quantization_config (format/hf_quant_config) and bitsandbytes'
// quant_state JSON on arbitrary bytes. Both must return a Status, never crash; an accepted config
// must satisfy the invariants the loader relies on (bits 4 or 8, a valid group size, a 2-element
// FP8 block size when present), an accepted quant_state a positive blocksize and [rows, cols].
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "format/hf_quant_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::format;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = parse_hf_quant_config(text);
  if (config.ok() && config->has_value()) {
    const HfQuantConfig& q = **config;
    const bool grouped = q.method == HfQuantMethod::kGptq || q.method == HfQuantMethod::kAwq;
    if (grouped && q.bits != 4 && q.bits != 8) __builtin_trap();
    if (grouped && (q.group_size == 0 || q.group_size < -1)) __builtin_trap();
    if (q.method == HfQuantMethod::kAwq && (q.bits != 4 || q.group_size <= 0)) __builtin_trap();
    if (!q.weight_block_size.empty() &&
        (q.weight_block_size.size() != 2 || q.weight_block_size[0] <= 0 ||
         q.weight_block_size[1] <= 0)) {
      __builtin_trap();
    }
  }
  auto state = parse_bnb_quant_state(text);
  if (state.ok()) {
    if (state->blocksize <= 0 || state->shape.size() != 2) __builtin_trap();
    if (state->shape[0] <= 0 || state->shape[1] <= 0) __builtin_trap();
    if (state->nested && state->nested_blocksize <= 0) __builtin_trap();
  }
  return 0;
}
