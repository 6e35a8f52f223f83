// Loading a model file into everything needed to serve it: the Model (weights mmapped), its
// Tokenizer, chat template and metadata.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::format {
class GgufFile;
}

namespace pagoda::model {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::string chat_template;  // empty if the file has none
  std::string path;
};

// Builds a Model from an opened GGUF file (config, architecture, weights).
Result<std::unique_ptr<Model>> load_model_from_gguf(std::shared_ptr<const format::GgufFile> file);

// Opens `path` (a GGUF file) and loads model, tokenizer and chat template.
Result<LoadedModel> load_model(const std::string& path);

}  // namespace pagoda::model
