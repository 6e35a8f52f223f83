// KvStorage: the memory behind the paged KV cache: for every layer, K and V arrays of
// num_blocks blocks in the layout kernels/attention.h documents (dtype f32, f16, bf16 or q8_0;
// a block of one layer's K is num_kv_heads * block_size * kernels::kv_row_bytes(dtype, head_dim)
// bytes, e.g. q8_0 stores 34 bytes per 32 values). A layout with values_in_keys (multi-head latent
// attention's latent cache) has only the K array per layer; its views' v points at it. Allocated
// once by a Backend as MemoryKind::kKvCache (committed: the memory the startup line promises is
// there before the first request, and no request takes a page fault on a fresh block); the KV
// metadata layer (src/kv) decides which block holds what.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <memory>

#include "backend/backend.h"
#include "base/status.h"
#include "kernels/attention.h"

namespace pagoda::backend {

// What the cache holds per block: every layer's K and V rows of num_kv_heads heads.
struct KvLayout {
  int32_t num_layers = 0;
  int32_t num_kv_heads = 0;
  int32_t head_dim = 0;
  // One row array per layer, read as both keys and values (KvLayerView::v == k): MLA caches one
  // [rope key | latent] row per token and attends to it in latent space (model/blocks/
  // mla_attention_block.h). Otherwise separate K and V arrays.
  bool values_in_keys = false;
  // Layers sharing arrays (hybrid models' KV groups, model::kv_layout): layer l's K/V live in
  // array layer_array[l]; empty: one array (pair) per layer. Every index < num_layers.
  std::vector<int32_t> layer_array = {};

  int32_t arrays_per_layer() const { return values_in_keys ? 1 : 2; }
  // The distinct (K, V) array pairs: num_layers, or 1 + the largest layer_array entry.
  int32_t num_arrays() const;
};

class KvStorage {
 public:
  // Bytes one block takes across all arrays (K and V, or K alone with values_in_keys).
  // invalid_argument names head_dim when the dtype cannot hold it (q8_0 needs a multiple of 32),
  // unimplemented for other dtypes.
  static Result<uint64_t> bytes_per_block(const KvLayout& layout, int32_t block_size,
                                          tensor::DType dtype);

  static Result<KvStorage> create(Backend& backend, const KvLayout& layout, int64_t num_blocks,
                                  int32_t block_size, tensor::DType dtype);

  std::span<const kernels::KvLayerView> layers() const { return layers_; }
  int64_t num_blocks() const { return num_blocks_; }
  int32_t block_size() const { return block_size_; }
  int32_t num_arrays() const { return num_arrays_; }  // distinct (K, V) array pairs
  uint64_t total_bytes() const { return memory_->size(); }

  // Copies every array's K/V of block `src` into block `dst` (copy-on-write).
  void copy_block(int32_t src, int32_t dst);

 private:
  Backend* backend_ = nullptr;
  std::unique_ptr<DeviceBuffer> memory_;
  uint64_t block_bytes_per_layer_ = 0;  // one of K or V, one layer, one block
  bool values_in_keys_ = false;
  int32_t num_arrays_ = 0;  // distinct (K, V) array pairs (KvLayout::num_arrays)
  int64_t num_blocks_ = 0;
  int32_t block_size_ = 0;
  std::vector<kernels::KvLayerView> layers_;
};

}  // namespace pagoda::backend
