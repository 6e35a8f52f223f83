#include "model/weight_binding.h"

#include "base/checked_math.h"
#include "kernels/quant.h"

namespace pagoda::model {
namespace {

std::string dims_str(int32_t n_dims, const int64_t* dims) {
  std::string s = "[";
  for (int32_t i = 0; i < n_dims; ++i)
    s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

}  // namespace

Result<const TensorRef*> WeightBinder::lookup(const std::string& name, int32_t n_dims,
                                              const int64_t* dims) const {
  const TensorRef* t = source_.find(name);
  if (t == nullptr) return not_found("tensor '{}' is missing", name);
  // Trailing dims of 1 are equivalent (a [n] vector may be stored as [n, 1]).
  for (int32_t i = 0; i < 4; ++i) {
    const int64_t want = i < n_dims ? dims[i] : 1;
    if (t->dims[i] != want) {
      return invalid_argument("tensor '{}' has shape {} but {} was expected", name,
                              dims_str(t->n_dims, t->dims), dims_str(n_dims, dims));
    }
  }
  if ((t->input_order != nullptr || t->zero_term != nullptr) && n_dims != 2) {
    return unimplemented(
        "tensor '{}' has an act-order input order or a zero-point term, which only a matrix can "
        "have",
        name);
  }
  if (!kernels::can_dequantize(t->dtype)) {
    return unimplemented("tensor '{}' has type {}, which pagoda cannot compute with yet", name,
                         tensor::dtype_name(t->dtype));
  }
  // The source validated size_bytes against its own dims; re-derive to be safe.
  auto row = tensor::row_size_bytes(t->dtype, static_cast<uint64_t>(dims[0]));
  if (!row.ok()) return row.status().with_context("tensor '" + name + "'");
  uint64_t total = *row;
  for (int32_t i = 1; i < n_dims; ++i) {
    auto next = checked_mul<uint64_t>(total, static_cast<uint64_t>(dims[i]));
    if (!next) return invalid_argument("tensor '{}' size overflows", name);
    total = *next;
  }
  if (total != t->size_bytes) {
    return invalid_argument("tensor '{}' holds {} bytes but its shape needs {}", name,
                            t->size_bytes, total);
  }
  return t;
}

Result<kernels::WeightView> WeightBinder::matrix(const std::string& name, int64_t rows,
                                                 int64_t cols) const {
  const int64_t dims[2] = {cols, rows};
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, lookup(name, 2, dims));
  kernels::WeightView w;
  w.dtype = t->dtype;
  w.rows = rows;
  w.cols = cols;
  w.row_bytes = static_cast<size_t>(*tensor::row_size_bytes(t->dtype, static_cast<uint64_t>(cols)));
  w.data = t->data;
  w.name = t->name;
  w.input_order = t->input_order;
  w.zero_term = t->zero_term;
  w.zero_group = t->zero_group;
  w.zero_stride = rows;
  return w;
}

Result<std::vector<kernels::WeightView>> WeightBinder::matrices(const std::string& name,
                                                                int64_t num, int64_t rows,
                                                                int64_t cols) const {
  const int64_t dims[3] = {cols, rows, num};
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, lookup(name, 3, dims));
  std::vector<kernels::WeightView> out;
  out.reserve(static_cast<size_t>(num));
  const size_t row_bytes =
      static_cast<size_t>(*tensor::row_size_bytes(t->dtype, static_cast<uint64_t>(cols)));
  for (int64_t e = 0; e < num; ++e) {
    kernels::WeightView w;
    w.dtype = t->dtype;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = row_bytes;
    w.data = t->data + static_cast<size_t>(e) * static_cast<size_t>(rows) * row_bytes;
    out.push_back(w);
  }
  return out;
}

Result<std::vector<float>> WeightBinder::vector(const std::string& name, int64_t n) const {
  const int64_t dims[1] = {n};
  PAGODA_ASSIGN_OR_RETURN(const TensorRef* t, lookup(name, 1, dims));
  std::vector<float> out(static_cast<size_t>(n));
  kernels::dequantize_row(t->dtype, t->data, out.data(), n);
  return out;
}

}  // namespace pagoda::model
