// The model::TensorSource of a GGUF file: its validated tensor table as refs into the mapping.
#pragma once

#include <memory>

#include "model/tensor_source.h"

namespace pagoda::format {
class GgufFile;
struct GgufTensorInfo;
}  // namespace pagoda::format

namespace pagoda::loader {

// A tensor of a validated GGUF file as a ref into its mapping.
model::TensorRef gguf_tensor_ref(const format::GgufTensorInfo& t);

// A source over a validated GGUF file (shared so the mapping outlives the model).
std::unique_ptr<model::TensorSource> make_gguf_tensor_source(
    std::shared_ptr<const format::GgufFile> file);

}  // namespace pagoda::loader
