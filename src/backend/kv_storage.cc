#include "backend/kv_storage.h"

#include <algorithm>

#include "base/checked_math.h"

namespace pagoda::backend {
namespace {

// One K (or V) block of one layer.
Result<uint64_t> layer_block_bytes(const KvLayout& c, int32_t block_size, tensor::DType dtype) {
  // The row size per dtype (q8_0: 34 bytes per 32 values; rejects a head_dim q8_0 cannot split).
  auto row_or = kernels::kv_row_bytes(dtype, c.head_dim);
  if (!row_or.ok() && c.values_in_keys && dtype == tensor::DType::kQ8_0) {
    return invalid_argument(
        "kv_cache_dtype q8_0 needs this model's MLA latent cache rows (rope key + kv_lora_rank = "
        "{} values) to be a multiple of 32 (its block size); use f16, bf16 or f32",
        c.head_dim);
  }
  PAGODA_ASSIGN_OR_RETURN(uint64_t row, std::move(row_or));
  if (block_size <= 0 || block_size > 4096) {
    return invalid_argument("block size {} is out of range [1, 4096]", block_size);
  }
  if (c.num_kv_heads <= 0) return invalid_argument("num_kv_heads {} must be > 0", c.num_kv_heads);
  auto n = checked_mul<uint64_t>(static_cast<uint64_t>(c.num_kv_heads),
                                 static_cast<uint64_t>(block_size));
  if (!n) return out_of_range("KV block size overflows");
  auto bytes = checked_mul<uint64_t>(*n, row);
  if (!bytes) return out_of_range("KV block size overflows");
  return *bytes;
}

}  // namespace

int32_t KvLayout::num_arrays() const {
  if (layer_array.empty()) return num_layers;
  int32_t n = 0;
  for (int32_t a : layer_array)
    n = std::max(n, a + 1);
  return n;
}

Result<uint64_t> KvStorage::bytes_per_block(const KvLayout& c, int32_t block_size,
                                            tensor::DType dtype) {
  PAGODA_ASSIGN_OR_RETURN(uint64_t per_layer, layer_block_bytes(c, block_size, dtype));
  if (!c.layer_array.empty()) {
    if (c.layer_array.size() != static_cast<size_t>(c.num_layers)) {
      return invalid_argument("KV layout maps {} layers to arrays, the model has {}",
                              c.layer_array.size(), c.num_layers);
    }
    for (int32_t a : c.layer_array) {
      if (a < 0 || a >= c.num_layers) {
        return invalid_argument("KV layout's array {} is outside [0, {})", a, c.num_layers);
      }
    }
  }
  auto total = checked_mul<uint64_t>(per_layer, static_cast<uint64_t>(c.arrays_per_layer()) *
                                                    static_cast<uint64_t>(c.num_arrays()));
  if (!total) return out_of_range("KV block size overflows");
  return *total;
}

Result<KvStorage> KvStorage::create(Backend& backend, const KvLayout& c, int64_t num_blocks,
                                    int32_t block_size, tensor::DType dtype) {
  if (num_blocks <= 0 || num_blocks > (int64_t{1} << 31)) {
    return invalid_argument("number of KV blocks {} is out of range", num_blocks);
  }
  PAGODA_ASSIGN_OR_RETURN(uint64_t per_layer, layer_block_bytes(c, block_size, dtype));
  PAGODA_ASSIGN_OR_RETURN(uint64_t per_block, bytes_per_block(c, block_size, dtype));
  auto total = checked_mul<uint64_t>(per_block, static_cast<uint64_t>(num_blocks));
  if (!total) return out_of_range("KV cache size overflows");
  auto memory = backend.allocate(*total, MemoryKind::kKvCache);
  if (!memory.ok()) {
    return resource_exhausted("cannot reserve {} bytes for the KV cache: {}", *total,
                              memory.status().message());
  }
  KvStorage s;
  s.backend_ = &backend;
  s.memory_ = std::move(memory).value();
  s.block_bytes_per_layer_ = per_layer;
  s.values_in_keys_ = c.values_in_keys;
  s.num_blocks_ = num_blocks;
  s.block_size_ = block_size;
  s.num_arrays_ = c.num_arrays();
  const uint64_t array_bytes = per_layer * static_cast<uint64_t>(num_blocks);
  const uint64_t arrays = static_cast<uint64_t>(c.arrays_per_layer());
  for (int32_t l = 0; l < c.num_layers; ++l) {
    const auto a =
        static_cast<uint64_t>(c.layer_array.empty() ? l : c.layer_array[static_cast<size_t>(l)]);
    kernels::KvLayerView v;
    v.dtype = dtype;
    v.block_size = block_size;
    v.n_kv_heads = c.num_kv_heads;
    v.head_dim = c.head_dim;
    v.num_blocks = num_blocks;
    v.k = s.memory_->data() + (arrays * a) * array_bytes;
    v.v = c.values_in_keys ? v.k : s.memory_->data() + (2 * a + 1) * array_bytes;
    s.layers_.push_back(v);
  }
  return s;
}

void KvStorage::copy_block(int32_t src, int32_t dst) {
  // Every K (and V) array once: arrays lie back to back, each num_blocks blocks long.
  const uint64_t n = block_bytes_per_layer_;
  const uint64_t array_bytes = n * static_cast<uint64_t>(num_blocks_);
  const uint64_t count = static_cast<uint64_t>(num_arrays_) * (values_in_keys_ ? 1 : 2);
  uint8_t* base = memory_->data();
  for (uint64_t a = 0; a < count; ++a) {
    uint8_t* array = base + a * array_bytes;
    backend_->copy(array + static_cast<uint64_t>(dst) * n, array + static_cast<uint64_t>(src) * n,
                   n);
  }
}

}  // namespace pagoda::backend
