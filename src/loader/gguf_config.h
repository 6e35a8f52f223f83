// GGUF metadata → model::ModelConfig: the `<arch>.*` hyper-parameter keys as llama.cpp reads
// them (defaults for absent optional keys, RoPE scaling none / linear / yarn, experts, the
// vocabulary size from the key, the tokenizer or the embedding).
#pragma once

#include "base/status.h"
#include "model/model_config.h"

namespace pagoda::format {
class GgufFile;
}

namespace pagoda::loader {

// Reads and validates `<arch>.*` metadata. Errors name the key.
Result<model::ModelConfig> config_from_gguf(const format::GgufFile& file);

}  // namespace pagoda::loader
