// Weight matrices re-encoded at load (see the header).
#include "loader/requantized_tensor_source.h"

#include "kernels/quant.h"

namespace pagoda::loader {

RequantizedTensorSource::RequantizedTensorSource(std::unique_ptr<model::TensorSource> base,
                                                 tensor::DType dtype)
    : base_(std::move(base)), dtype_(dtype) {}

bool RequantizedTensorSource::converts(const model::TensorRef& ref, tensor::DType dtype) {
  if (ref.n_dims != 2 || ref.dtype == dtype || !kernels::can_dequantize(ref.dtype)) return false;
  const std::string_view name = ref.name;
  constexpr std::string_view kSuffix = ".weight";
  if (name.size() < kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return false;
  }
  if (name == "token_embd.weight") return false;  // a lookup table, not a matmul
  if (ref.zero_term != nullptr) return false;     // rows alone are not its values (GPTQ / AWQ)
  const tensor::DTypeInfo& from = tensor::dtype_info(ref.dtype);
  const tensor::DTypeInfo& to = tensor::dtype_info(dtype);
  if (ref.dims[0] % to.block_size != 0) return false;
  // Only to a narrower type (bytes per element).
  return static_cast<uint64_t>(from.type_size) * to.block_size >
         static_cast<uint64_t>(to.type_size) * from.block_size;
}

const model::TensorRef* RequantizedTensorSource::find(std::string_view name) const {
  const model::TensorRef* ref = base_->find(name);
  if (ref == nullptr || !converts(*ref, dtype_)) return ref;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = converted_.find(std::string(name));
  if (it != converted_.end()) return &it->second->ref;
  const int64_t cols = ref->dims[0], rows = ref->dims[1];
  auto from_row = tensor::row_size_bytes(ref->dtype, static_cast<uint64_t>(cols));
  auto to_row = tensor::row_size_bytes(dtype_, static_cast<uint64_t>(cols));
  if (!from_row.ok() || !to_row.ok() || *from_row * static_cast<uint64_t>(rows) > ref->size_bytes) {
    return ref;  // not a plain matrix of rows: left as it is
  }
  auto c = std::make_unique<Converted>();
  c->data.resize(*to_row * static_cast<uint64_t>(rows));
  const uint64_t fr = *from_row, tr = *to_row;
  const uint8_t* src = ref->data;
  uint8_t* dst = c->data.data();
  const tensor::DType from = ref->dtype, to = dtype_;
#pragma omp parallel
  {
    std::vector<float> row(static_cast<size_t>(cols));
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      kernels::dequantize_row(from, src + static_cast<uint64_t>(r) * fr, row.data(), cols);
      kernels::quantize_row(to, row.data(), dst + static_cast<uint64_t>(r) * tr, cols);
    }
  }
  c->ref = *ref;
  c->ref.dtype = dtype_;
  c->ref.data = c->data.data();
  c->ref.size_bytes = c->data.size();
  const model::TensorRef* out = &c->ref;
  converted_.emplace(std::string(name), std::move(c));
  return out;
}

}  // namespace pagoda::loader
