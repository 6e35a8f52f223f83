// Loading LoRA adapters for a loaded model, in PEFT's form (a directory with adapter_config.json
// and adapter_model.safetensors: base_model.model.model.layers.N.{self_attn,mlp}.M.lora_{A,B}
// .weight) or llama.cpp's GGUF LoRA form (general.type "adapter": blk.N.T.weight.lora_{a,b}).
// Everything is checked against the base model before use: every tensor name (unknown ones and
// modules outside q/k/v/o/gate/up/down are refused by name), shapes, ranks (<= max_rank), the
// GGUF adapter's architecture. A and B become F32, the scale (format/lora_adapter_config.h)
// folded into B. A PEFT adapter on a GGUF llama-family base (interleaved RoPE: q/k rows permuted
// at conversion) gets its q/k B rows permuted the same way, as llama.cpp's converter does.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "model/lora.h"
#include "model/model_config.h"

namespace pagoda::loader {

// True if `path` looks like a PEFT adapter directory (holds adapter_config.json).
bool is_peft_adapter_dir(const std::string& path);

// Loads the adapter at `path` (a PEFT directory or a GGUF file) as `name` for a model of
// `config`. Errors start with the path.
Result<std::unique_ptr<model::LoraAdapter>> load_lora_adapter(const std::string& path,
                                                              const std::string& name,
                                                              const model::ModelConfig& config,
                                                              int32_t max_rank);

}  // namespace pagoda::loader
