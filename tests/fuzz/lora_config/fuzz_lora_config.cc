// libFuzzer target: LoRA adapter metadata (format/lora_adapter_config) on arbitrary bytes, as a
// PEFT adapter_config.json and as a GGUF file's adapter keys. Both must return a Status, never
// crash; an accepted PEFT config has a rank in [1, kMaxLoraRank], a finite alpha, a finite
// positive-rank scale and at least one target module; an accepted GGUF one an architecture.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "format/gguf_file.h"
#include "format/lora_adapter_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace pagoda::format;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto peft = parse_peft_lora_config(text);
  if (peft.ok()) {
    if (peft->rank < 1 || peft->rank > kMaxLoraRank) __builtin_trap();
    if (!std::isfinite(peft->alpha) || !std::isfinite(peft->scale(peft->rank))) __builtin_trap();
    if (peft->target_modules.empty()) __builtin_trap();
  }
  auto file = GgufFile::parse(std::span<const uint8_t>(data, size));
  if (file.ok()) {
    auto gguf = read_gguf_lora_config(**file);
    if (gguf.ok() && (gguf->architecture.empty() || !std::isfinite(gguf->scale(8)))) {
      __builtin_trap();
    }
  }
  return 0;
}
