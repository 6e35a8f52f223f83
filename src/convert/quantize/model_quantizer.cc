#include "convert/quantize/model_quantizer.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "base/mapped_file.h"
#include "convert/quantize/weighted_quant.h"
#include "format/gguf_file.h"
#include "format/imatrix_file.h"
#include "kernels/quant.h"
#include "tensor/float16.h"

namespace pagoda::convert {
namespace {

// Elements re-encoded per chunk handed to the writer.
constexpr uint64_t kChunkElements = uint64_t{1} << 20;

// F16 -> F32 by table (exact; about twice as fast as converting each value).
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t i = 0; i < 65536; ++i)
      t[i] = tensor::fp16_to_fp32(static_cast<uint16_t>(i));
    return t;
  }();
  return table.data();
}

}  // namespace

void tensor_row_to_f32(tensor::DType type, const uint8_t* src, float* dst, uint64_t n) {
  if (type == tensor::DType::kF16) {
    const float* table = f16_table();
    for (uint64_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = table[h];
    }
    return;
  }
  kernels::dequantize_row(type, src, dst, static_cast<int64_t>(n));
}

namespace {

struct SharedProgress {
  QuantizeProgressFn callback;
  size_t num_tensors = 0;
  uint64_t in_bytes_total = 0;
  uint64_t in_bytes_done = 0;

  void advance(size_t index, std::string_view name, uint64_t bytes) {
    in_bytes_done += bytes;
    if (callback) callback({index, num_tensors, name, in_bytes_done, in_bytes_total});
  }
};

// Copies a tensor unchanged, in chunks so progress moves.
Status copy_tensor(const format::GgufTensorInfo& t, size_t index, SharedProgress& progress,
                   const format::GgufWriter::ByteSink& sink) {
  constexpr uint64_t kChunk = uint64_t{8} << 20;
  for (uint64_t off = 0; off < t.size_bytes; off += kChunk) {
    const uint64_t n = std::min(kChunk, t.size_bytes - off);
    PAGODA_RETURN_IF_ERROR(
        sink(t.bytes().subspan(static_cast<size_t>(off), static_cast<size_t>(n))));
    release_pages(t.data + off, t.data + off + n);
    progress.advance(index, t.name, n);
  }
  return Status();
}

Status requantize_tensor(const format::GgufTensorInfo& t, tensor::DType out_type,
                         const std::vector<float>* importance, int num_threads, size_t index,
                         SharedProgress& progress, const format::GgufWriter::ByteSink& sink) {
  const uint64_t nx = t.dims[0];
  const uint64_t rows = t.num_elements / nx;
  // Both were validated when planning (row sizes exist for nx).
  const uint64_t in_row = *tensor::row_size_bytes(t.dtype, nx);
  const uint64_t out_row = *tensor::row_size_bytes(out_type, nx);
  const uint64_t rows_per_chunk = std::max<uint64_t>(1, kChunkElements / nx);
  std::vector<uint8_t> out(static_cast<size_t>(std::min(rows, rows_per_chunk) * out_row));
  for (uint64_t first = 0; first < rows; first += rows_per_chunk) {
    const auto count = static_cast<int64_t>(std::min(rows_per_chunk, rows - first));
    std::atomic<int64_t> bad_row{-1};
    const uint8_t* src = t.data + first * in_row;
    uint8_t* dst = out.data();
#pragma omp parallel num_threads(num_threads)
    {
      std::vector<float> row(static_cast<size_t>(nx));
      std::vector<float> weights(importance != nullptr ? static_cast<size_t>(nx) : 0);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < count; ++r) {
        tensor_row_to_f32(t.dtype, src + static_cast<uint64_t>(r) * in_row, row.data(), nx);
        bool finite = true;
        for (float v : row)
          finite &= std::isfinite(v);
        if (!finite) {
          int64_t expected = -1;
          bad_row.compare_exchange_strong(expected, static_cast<int64_t>(first) + r);
          continue;
        }
        uint8_t* out_bytes = dst + static_cast<uint64_t>(r) * out_row;
        if (importance != nullptr) {
          element_weights(row.data(), importance->data(), static_cast<int64_t>(nx), weights.data());
          quantize_row_weighted(out_type, row.data(), weights.data(), out_bytes,
                                static_cast<int64_t>(nx));
        } else {
          kernels::quantize_row(out_type, row.data(), out_bytes, static_cast<int64_t>(nx));
        }
      }
    }
    if (bad_row.load() >= 0) {
      return invalid_argument("tensor '{}' row {} holds a non-finite value", t.name,
                              bad_row.load());
    }
    PAGODA_RETURN_IF_ERROR(
        sink(std::span<const uint8_t>(dst, static_cast<size_t>(count) * out_row)));
    release_pages(src, src + static_cast<uint64_t>(count) * in_row);
    progress.advance(index, t.name, static_cast<uint64_t>(count) * in_row);
  }
  return Status();
}

int32_t metadata_count(const format::GgufFile& in, const std::string& key) {
  auto v = in.get_uint(key);
  if (!v.ok() || *v > (uint64_t{1} << 20)) return 0;
  return static_cast<int32_t>(*v);
}

}  // namespace

MixModel mix_model_from_gguf(const format::GgufFile& in) {
  MixModel m;
  if (auto arch = in.get_string("general.architecture"); arch.ok()) m.arch = std::string(*arch);
  const std::string a = m.arch + ".";
  m.num_layers = metadata_count(in, a + "block_count");
  m.num_heads = metadata_count(in, a + "attention.head_count");
  m.num_kv_heads = metadata_count(in, a + "attention.head_count_kv");
  if (m.num_kv_heads == 0) m.num_kv_heads = m.num_heads;
  m.num_experts = metadata_count(in, a + "expert_count");
  return m;
}

Result<std::vector<TensorPlan>> plan_types_for(const format::GgufFile& in, FileType type,
                                               std::optional<tensor::DType> token_embedding_type) {
  const MixModel model = mix_model_from_gguf(in);
  std::vector<MixTensor> descs;
  descs.reserve(in.tensors().size());
  for (const format::GgufTensorInfo& t : in.tensors()) {
    MixTensor d;
    d.name = t.name;
    d.n_dims = t.n_dims;
    std::copy(t.dims, t.dims + 4, d.dims);
    d.dtype = t.dtype;
    descs.push_back(d);
  }
  PAGODA_ASSIGN_OR_RETURN(std::vector<TensorPlan> plans, plan_tensor_types(model, type, descs));
  if (!token_embedding_type) return plans;
  for (size_t i = 0; i < descs.size(); ++i) {
    if (descs[i].name != "token_embd.weight" || !is_quantizable(descs[i])) continue;
    const tensor::DType want = *token_embedding_type;
    if (!kernels::can_quantize(want))
      return invalid_argument("token embedding type {} cannot be written",
                              tensor::dtype_name(want));
    if (!tensor::row_size_bytes(want, descs[i].dims[0]).ok()) {
      return invalid_argument(
          "token embedding type {}: token_embd.weight has rows of {}, not whole {} blocks",
          tensor::dtype_name(want), descs[i].dims[0], tensor::dtype_name(want));
    }
    plans[i].dtype = want;
    plans[i].quantize = want != descs[i].dtype;
    plans[i].fallback = false;
  }
  return plans;
}

Result<QuantizedModel> build_quantized_model(const format::GgufFile& in,
                                             const QuantizeOptions& options,
                                             QuantizeProgressFn progress) {
  using format::GgufWriteValue;
  if (auto split = in.get_uint("split.count"); split.ok() && *split > 1) {
    return unimplemented("{}: split GGUF files ({} parts) cannot be quantized yet", in.name(),
                         *split);
  }
  QuantizedModel out;
  PAGODA_ASSIGN_OR_RETURN(out.plans,
                          plan_types_for(in, options.file_type, options.token_embedding_type));

  for (const format::GgufKv& kv : in.metadata()) {
    if (kv.key.starts_with("split.")) continue;
    out.writer.set(std::string(kv.key), GgufWriteValue::copy_of(kv.value));
  }
  out.writer.set("general.quantization_version", GgufWriteValue::u32(2));
  out.writer.set("general.file_type",
                 GgufWriteValue::u32(static_cast<uint32_t>(options.file_type)));

  auto shared = std::make_shared<SharedProgress>();
  shared->callback = std::move(progress);
  shared->num_tensors = in.tensors().size();
  const int num_threads = options.num_threads > 0 ? options.num_threads : omp_get_max_threads();
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    const format::GgufTensorInfo& t = in.tensors()[i];
    const TensorPlan& plan = out.plans[i];
    std::vector<uint64_t> dims(t.dims, t.dims + t.n_dims);
    shared->in_bytes_total += t.size_bytes;
    out.in_bytes += t.size_bytes;
    if (options.calibrated != nullptr) {
      if (auto it = options.calibrated->find(t.name); it != options.calibrated->end()) {
        std::shared_ptr<const CalibratedTensor> c = it->second;
        const tensor::DType want = plan.quantize ? plan.dtype : t.dtype;
        auto size = tensor::row_size_bytes(want, t.dims[0]);
        if (c->dtype != want || !size.ok() ||
            *size * (t.num_elements / t.dims[0]) != c->bytes.size()) {
          return internal_error("calibrated tensor '{}' is {} ({} bytes), the plan wants {}",
                                t.name, tensor::dtype_name(c->dtype), c->bytes.size(),
                                tensor::dtype_name(want));
        }
        out.out_bytes += c->bytes.size();
        ++out.num_calibrated;
        out.writer.add_tensor(std::string(t.name), want, std::move(dims),
                              [c, &t, i, shared](const format::GgufWriter::ByteSink& sink) {
                                PAGODA_RETURN_IF_ERROR(sink(std::span<const uint8_t>(c->bytes)));
                                shared->advance(i, t.name, t.size_bytes);
                                return Status();
                              });
        continue;
      }
    }
    if (!plan.quantize) {
      out.out_bytes += t.size_bytes;
      out.writer.add_tensor(std::string(t.name), t.dtype, std::move(dims),
                            [&t, i, shared](const format::GgufWriter::ByteSink& sink) {
                              return copy_tensor(t, i, *shared, sink);
                            });
      continue;
    }
    if (!kernels::can_dequantize(t.dtype)) {
      return unimplemented("tensor '{}' has type {}, which pagoda cannot read to requantize",
                           t.name, tensor::dtype_name(t.dtype));
    }
    auto out_row = tensor::row_size_bytes(plan.dtype, t.dims[0]);
    if (!out_row.ok() || !tensor::row_size_bytes(t.dtype, t.dims[0]).ok()) {
      return internal_error("tensor '{}': no whole {} rows of {}", t.name,
                            tensor::dtype_name(plan.dtype), t.dims[0]);
    }
    out.out_bytes += *out_row * (t.num_elements / t.dims[0]);
    const tensor::DType type = plan.dtype;
    const std::vector<float>* importance = nullptr;
    if (options.imatrix != nullptr) {
      const format::ImatrixEntry* e = options.imatrix->find(t.name);
      if (e != nullptr && e->values.size() != t.dims[0]) {
        return invalid_argument("imatrix entry '{}' has {} values, the tensor {} columns", t.name,
                                e->values.size(), t.dims[0]);
      }
      if (e != nullptr && supports_weighted(type)) {
        importance = &e->values;
        ++out.num_weighted;
      }
    }
    out.writer.add_tensor(
        std::string(t.name), type, std::move(dims),
        [&t, type, importance, num_threads, i, shared](const format::GgufWriter::ByteSink& sink) {
          return requantize_tensor(t, type, importance, num_threads, i, *shared, sink);
        });
  }
  return out;
}

}  // namespace pagoda::convert
