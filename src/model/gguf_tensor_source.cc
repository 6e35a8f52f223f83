#include <unordered_map>
#include <vector>

#include "format/gguf_file.h"
#include "model/tensor_source.h"

namespace pagoda::model {
namespace {

class GgufTensorSource final : public TensorSource {
 public:
  explicit GgufTensorSource(std::shared_ptr<const format::GgufFile> file) : file_(std::move(file)) {
    refs_.reserve(file_->tensors().size());
    for (const auto& t : file_->tensors()) {
      TensorRef r;
      r.name = t.name;
      r.dtype = t.dtype;
      r.n_dims = static_cast<int32_t>(t.n_dims);
      for (int i = 0; i < 4; ++i)
        r.dims[i] = static_cast<int64_t>(t.dims[i]);
      r.data = t.data;
      r.size_bytes = t.size_bytes;
      refs_.push_back(r);
    }
    for (size_t i = 0; i < refs_.size(); ++i)
      by_name_.emplace(refs_[i].name, i);
  }

  const TensorRef* find(std::string_view name) const override {
    auto it = by_name_.find(name);
    return it == by_name_.end() ? nullptr : &refs_[it->second];
  }
  size_t num_tensors() const override { return refs_.size(); }

 private:
  std::shared_ptr<const format::GgufFile> file_;
  std::vector<TensorRef> refs_;
  std::unordered_map<std::string_view, size_t> by_name_;
};

}  // namespace

std::unique_ptr<TensorSource> make_gguf_tensor_source(
    std::shared_ptr<const format::GgufFile> file) {
  return std::make_unique<GgufTensorSource>(std::move(file));
}

}  // namespace pagoda::model
