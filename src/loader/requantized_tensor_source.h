// RequantizedTensorSource: a model's weight matrices re-encoded in a cheaper type at load (e.g. a
// Q8_0 or F16 model's projections as Q4_0), over another TensorSource. What self-speculation
// drafts with: the target's own weights, no second file. 2-D ".weight" tensors whose rows are
// whole blocks of the new type and whose type is wider are converted (dequantize → quantize, as
// ggml's reference quantizer does, no importance matrix); the token embedding, norms and
// everything else are the base source's. Conversions happen at the first find() of a name and
// are kept (thread-safe).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/tensor_source.h"
#include "tensor/dtype.h"

namespace pagoda::loader {

class RequantizedTensorSource final : public model::TensorSource {
 public:
  // precondition: kernels::can_quantize(dtype)
  RequantizedTensorSource(std::unique_ptr<model::TensorSource> base, tensor::DType dtype);

  const model::TensorRef* find(std::string_view name) const override;
  size_t num_tensors() const override { return base_->num_tensors(); }

  // Whether `ref` is converted (see the file comment).
  static bool converts(const model::TensorRef& ref, tensor::DType dtype);

 private:
  struct Converted {
    model::TensorRef ref;
    std::vector<uint8_t> data;
  };
  std::unique_ptr<model::TensorSource> base_;
  tensor::DType dtype_;
  mutable std::mutex mu_;
  mutable std::unordered_map<std::string, std::unique_ptr<Converted>> converted_;
};

}  // namespace pagoda::loader
