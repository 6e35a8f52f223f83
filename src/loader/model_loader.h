// Loading a model file into everything needed to serve it: the Model (weights mmapped), its
// Tokenizer, chat template and metadata. A model is a GGUF file or a Hugging Face model
// directory (config.json + safetensors + tokenizer.json; see loader/hf/hf_checkpoint.h).
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "loader/hf/generation_defaults.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::format {
class GgufFile;
}

namespace pagoda::loader {

struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::string chat_template;  // empty if the file has none
  std::string path;
  // Sampling defaults shipped with the model (generation_config.json); empty for GGUF files.
  GenerationDefaults generation;
};

// Builds a Model from an opened GGUF file (config, architecture, weights on `backend`).
Result<std::unique_ptr<model::Model>> load_model_from_gguf(
    std::shared_ptr<const format::GgufFile> file,
    backend::Backend& backend = backend::cpu_backend());

// Opens `path` (a GGUF file, or a Hugging Face model directory) and loads model (its weights on
// `backend`), tokenizer, chat template (and, for directories, the generation defaults).
Result<LoadedModel> load_model(const std::string& path,
                               backend::Backend& backend = backend::cpu_backend());

// The model at `path` with its weight matrices re-encoded as `dtype` at load (self-speculation's
// draft: see requantized_tensor_source.h). invalid_argument if `dtype` cannot be written.
Result<std::unique_ptr<model::Model>> load_requantized_model(
    const std::string& path, tensor::DType dtype,
    backend::Backend& backend = backend::cpu_backend());

// The tokenizer alone (no weights are opened), from a GGUF file, a model directory or a directory
// holding only the tokenizer files (tokenizer.json, ...); the chat template too when
// `chat_template` is not null.
Result<std::unique_ptr<tokenizer::Tokenizer>> load_tokenizer(const std::string& path,
                                                             std::string* chat_template = nullptr);

}  // namespace pagoda::loader
