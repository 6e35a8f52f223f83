// TensorSource: named weight tensors from any file format (GGUF, safetensors; loader/ makes the
// sources), as views into memory the source keeps alive. Dims are in ggml order: dims[0] is
// contiguous, so a 2-D matrix with dims {cols, rows} is `rows` rows of `cols` elements (HF Linear
// [out, in] is the same).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tensor/dtype.h"

namespace pagoda::model {

struct TensorRef {
  std::string_view name;
  tensor::DType dtype = tensor::DType::kF32;
  int32_t n_dims = 0;
  int64_t dims[4] = {1, 1, 1, 1};
  const uint8_t* data = nullptr;
  uint64_t size_bytes = 0;
  // Optional [dims[0]], for a matrix only: stored column j holds input input_order[j]
  // (kernels::WeightView::input_order; act-order GPTQ repacked by loader/hf). Readers that take
  // the columns in file order must apply it (or refuse the tensor).
  const int32_t* input_order = nullptr;
  // Optional, for a matrix only: the zero term of an asymmetric GPTQ/AWQ weight,
  // [ceil(dims[0] / zero_group), dims[1]] f32 (kernels::WeightView::zero_term, its stride dims[1]).
  // Readers that dequantise the matrix must add it (kernels::dequantize_weight_row does both).
  const float* zero_term = nullptr;
  int64_t zero_group = 0;
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual const TensorRef* find(std::string_view name) const = 0;
  virtual size_t num_tensors() const = 0;
};

// A TensorSource over a list of refs into memory that `owner` keeps alive (a mapped file); what
// every format's source is once its tensor table is read. Names must be unique.
class RefTensorSource final : public TensorSource {
 public:
  RefTensorSource(std::vector<TensorRef> refs, std::shared_ptr<const void> owner);
  const TensorRef* find(std::string_view name) const override;
  size_t num_tensors() const override { return refs_.size(); }

 private:
  std::shared_ptr<const void> owner_;
  std::vector<TensorRef> refs_;
  std::unordered_map<std::string_view, size_t> by_name_;
};

}  // namespace pagoda::model
