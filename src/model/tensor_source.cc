// RefTensorSource: the name index shared by the GGUF and Hugging Face tensor sources.
#include "model/tensor_source.h"

#include <utility>

namespace pagoda::model {

RefTensorSource::RefTensorSource(std::vector<TensorRef> refs, std::shared_ptr<const void> owner)
    : owner_(std::move(owner)), refs_(std::move(refs)) {
  by_name_.reserve(refs_.size());
  for (size_t i = 0; i < refs_.size(); ++i)
    by_name_.emplace(refs_[i].name, i);
}

const TensorRef* RefTensorSource::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &refs_[it->second];
}

}  // namespace pagoda::model
