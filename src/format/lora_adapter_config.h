// The metadata of a LoRA adapter, in its two file forms, parsed into a plain struct and checked
// against what pagoda can apply. Every refusal is invalid_argument (malformed) or unimplemented
// (a real PEFT/llama.cpp feature pagoda does not apply) naming the field, e.g.
// "adapter_config.json: r is 0, not a rank in [1, 65536]".
//
//   PEFT adapter_config.json  peft_type "LORA" (when present), r, lora_alpha, target_modules (a
//                             list of module names; the regex string form is unimplemented),
//                             use_rslora (scale alpha / sqrt(r) instead of alpha / r),
//                             fan_in_fan_out (true only for GPT-2-style Conv1D bases: refused),
//                             bias "none"; use_dora, modules_to_save, rank_pattern,
//                             alpha_pattern, layers_to_transform and layer_replication refused
//                             when set. Other keys (lora_dropout, task_type, ...) do not change
//                             inference and are ignored.
//   llama.cpp GGUF LoRA       general.type "adapter", adapter.type "lora", adapter.lora.alpha
//                             (0 or absent: scale 1, as llama.cpp), general.architecture.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::format {

class GgufFile;

struct LoraAdapterConfig {
  int64_t rank = 0;  // PEFT r (GGUF: 0, each tensor pair has its own)
  double alpha = 0;
  bool use_rslora = false;
  std::vector<std::string> target_modules;  // PEFT names as written ("q_proj", ...)
  std::string architecture;                 // GGUF general.architecture ("" for PEFT)

  // The factor B·A is multiplied by for a pair of rank `rank`.
  double scale(int64_t rank) const;
};

inline constexpr int64_t kMaxLoraRank = 65536;

// adapter_config.json's text.
Result<LoraAdapterConfig> parse_peft_lora_config(std::string_view json_text);
// A GGUF file's adapter metadata.
Result<LoraAdapterConfig> read_gguf_lora_config(const GgufFile& file);

}  // namespace pagoda::format
