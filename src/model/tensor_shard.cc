#include "model/tensor_shard.h"

#include <cstring>
#include <string>

#include "base/checked_math.h"
#include "base/mapped_file.h"

namespace pagoda::model {
namespace {

kernels::WeightView rows_of(const kernels::WeightView& w, int64_t r0, int64_t n) {
  kernels::WeightView out = w;
  out.rows = n;
  out.data = w.data + static_cast<size_t>(r0) * w.row_bytes;
  return out;
}

std::vector<float> part_of(const std::vector<float>& v, int64_t begin, int64_t n) {
  if (v.empty()) return v;
  return std::vector<float>(v.begin() + begin, v.begin() + begin + n);
}

// Columns [c0, c0 + n) of every row of w, copied into `owned`.
Result<kernels::WeightView> columns_of(const kernels::WeightView& w, int64_t c0, int64_t n,
                                       std::vector<std::vector<uint8_t>>& owned) {
  const tensor::DTypeInfo& info = tensor::dtype_info(w.dtype);
  const int64_t block = info.block_size;
  if (c0 % block != 0 || n % block != 0) {
    return invalid_argument(
        "tensor '{}' ({}) cannot be split by tensor parallelism: its {} input columns split into "
        "shares of {}, which is not a multiple of the {}-element quantisation block",
        std::string(w.name), tensor::dtype_name(w.dtype), w.cols, n, block);
  }
  PAGODA_ASSIGN_OR_RETURN(uint64_t row_bytes,
                          tensor::row_size_bytes(w.dtype, static_cast<uint64_t>(n)));
  const size_t offset = static_cast<size_t>(c0 / block) * info.type_size;
  auto total = checked_mul<uint64_t>(row_bytes, static_cast<uint64_t>(w.rows));
  if (!total) return out_of_range("tensor '{}' shard size overflows", std::string(w.name));
  std::vector<uint8_t>& buf = owned.emplace_back(static_cast<size_t>(*total));
  for (int64_t r = 0; r < w.rows; ++r) {
    std::memcpy(buf.data() + static_cast<size_t>(r) * row_bytes, w.row(r) + offset, row_bytes);
  }
  // This rank reads only its copy: the file pages it touched may go (they stay readable).
  release_pages(w.data, w.data + static_cast<size_t>(w.rows) * w.row_bytes);
  kernels::WeightView out = w;
  out.cols = n;
  out.row_bytes = static_cast<size_t>(row_bytes);
  out.data = buf.data();
  out.packed = nullptr;
  return out;
}

}  // namespace

Result<ModelConfig> shard_config(const ModelConfig& full, int32_t rank, int32_t size) {
  if (size < 1 || rank < 0 || rank >= size) {
    return invalid_argument("tensor-parallel rank {} of {} is out of range", rank, size);
  }
  ModelConfig c = full;
  if (size == 1) return c;
  if (full.num_experts > 0) {
    return unimplemented("tensor parallelism does not split MoE layers yet ({} experts)",
                         full.num_experts);
  }
  if (full.mla()) return unimplemented("tensor parallelism does not split MLA attention yet");
  if (full.num_kv_heads % size != 0) {
    return invalid_argument("num_kv_heads {} is not divisible by --tensor-parallel-size {}",
                            full.num_kv_heads, size);
  }
  if (full.num_heads % size != 0) {
    return invalid_argument("num_heads {} is not divisible by --tensor-parallel-size {}",
                            full.num_heads, size);
  }
  if (full.ffn_dim % size != 0) {
    return invalid_argument("feed_forward_length {} is not divisible by --tensor-parallel-size {}",
                            full.ffn_dim, size);
  }
  if (full.vocab_size < size) {
    return invalid_argument("vocab_size {} is smaller than --tensor-parallel-size {}",
                            full.vocab_size, size);
  }
  c.num_heads = full.num_heads / size;
  c.num_kv_heads = full.num_kv_heads / size;
  c.ffn_dim = full.ffn_dim / size;
  return c;
}

Result<TensorShard> shard_decoder_weights(const ModelConfig& full, int32_t rank, int32_t size,
                                          DecoderWeights& w) {
  PAGODA_ASSIGN_OR_RETURN(ModelConfig local, shard_config(full, rank, size));
  TensorShard shard;
  shard.rank = rank;
  shard.size = size;
  shard.vocab_stride = (full.vocab_size + size - 1) / size;
  shard.vocab_begin = std::min(full.vocab_size, rank * shard.vocab_stride);
  shard.vocab_count = std::min(shard.vocab_stride, full.vocab_size - shard.vocab_begin);
  if (size == 1) return shard;
  if (shard.vocab_count <= 0) {
    return invalid_argument("vocab_size {} leaves rank {} of {} no output rows", full.vocab_size,
                            rank, size);
  }
  const int64_t q0 = int64_t{rank} * local.q_dim(), qn = local.q_dim();
  const int64_t k0 = int64_t{rank} * local.kv_dim(), kn = local.kv_dim();
  const int64_t f0 = int64_t{rank} * local.ffn_dim, fn = local.ffn_dim;
  for (DecoderLayer& L : w.layers) {
    AttentionWeights& a = L.attn;
    a.wq = rows_of(a.wq, q0, qn);
    a.wk = rows_of(a.wk, k0, kn);
    a.wv = rows_of(a.wv, k0, kn);
    a.bq = part_of(a.bq, q0, qn);
    a.bk = part_of(a.bk, k0, kn);
    a.bv = part_of(a.bv, k0, kn);
    PAGODA_ASSIGN_OR_RETURN(a.wo, columns_of(a.wo, q0, qn, shard.owned));
    L.ffn.gate = rows_of(L.ffn.gate, f0, fn);
    L.ffn.up = rows_of(L.ffn.up, f0, fn);
    PAGODA_ASSIGN_OR_RETURN(L.ffn.down, columns_of(L.ffn.down, f0, fn, shard.owned));
  }
  w.output = rows_of(w.output, shard.vocab_begin, shard.vocab_count);
  return shard;
}

}  // namespace pagoda::model
