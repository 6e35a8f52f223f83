// The TensorSource of a GGUF file: its validated tensor table as refs into the mapping.
#include "loader/gguf_tensor_source.h"

#include <vector>

#include "format/gguf_file.h"

namespace pagoda::loader {

model::TensorRef gguf_tensor_ref(const format::GgufTensorInfo& t) {
  model::TensorRef r;
  r.name = t.name;
  r.dtype = t.dtype;
  r.n_dims = static_cast<int32_t>(t.n_dims);
  for (int i = 0; i < 4; ++i)
    r.dims[i] = static_cast<int64_t>(t.dims[i]);
  r.data = t.data;
  r.size_bytes = t.size_bytes;
  return r;
}

std::unique_ptr<model::TensorSource> make_gguf_tensor_source(
    std::shared_ptr<const format::GgufFile> file) {
  std::vector<model::TensorRef> refs;
  refs.reserve(file->tensors().size());
  for (const auto& t : file->tensors()) {
    refs.push_back(gguf_tensor_ref(t));
  }
  return std::make_unique<model::RefTensorSource>(std::move(refs), std::move(file));
}

}  // namespace pagoda::loader
