#include "model/tensor_shard.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "base/check.h"
#include "base/checked_math.h"
#include "base/log.h"
#include "base/mapped_file.h"
#include "kernels/quant.h"

namespace pagoda::model {
namespace {

kernels::WeightView rows_of(const kernels::WeightView& w, int64_t r0, int64_t n) {
  return kernels::row_slice(w, r0, n);
}

std::vector<float> part_of(const std::vector<float>& v, int64_t begin, int64_t n) {
  if (v.empty()) return v;
  return std::vector<float>(v.begin() + begin, v.begin() + begin + n);
}

// The zero term (GPTQ/AWQ, weight_view.h) of stored columns [c0, c0 + n) of w: a view at group
// c0 / zero_group (group-major, so a column range's groups are consecutive runs of zero_stride
// floats; the stride stays the whole matrix's). The share must start on a group and end on one
// (or at the last column).
Status slice_zero_term(const kernels::WeightView& w, int64_t c0, int64_t n,
                       kernels::WeightView& out) {
  if (w.zero_term == nullptr) return Status();
  const int64_t g = w.zero_group;
  if (g <= 0 || c0 % g != 0 || (n % g != 0 && c0 + n != w.cols)) {
    return invalid_argument(
        "tensor '{}' cannot be split by tensor parallelism: its share of input columns [{}, {}) "
        "does not start and end on its {}-column zero-point groups (GPTQ/AWQ group_size)",
        std::string(w.name), c0, c0 + n, g);
  }
  out.zero_term = w.zero_term + (c0 / g) * w.zero_stride;
  return Status();
}

// Stored columns [c0, c0 + n) of every row of w, copied into `owned` (the zero term's groups of
// those columns stay a view). An input order is the caller's to resolve (split_ffn,
// wo_columns_of); one left (MLA's wo) is refused by name.
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
  if (w.input_order != nullptr) {
    return unimplemented(
        "tensor '{}' cannot be split by tensor parallelism: its input columns are stored in "
        "act-order (GPTQ desc_act) and this rank's inputs are scattered over its blocks",
        std::string(w.name));
  }
  kernels::WeightView out = w;
  PAGODA_RETURN_IF_ERROR(slice_zero_term(w, c0, n, out));
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
  out.cols = n;
  out.row_bytes = static_cast<size_t>(row_bytes);
  out.data = buf.data();
  out.packed = nullptr;
  return out;
}

// Input columns [c0, c0 + n) (input order) of an act-order weight whose rank keeps fixed inputs
// (wo: its heads), whose stored columns are scattered over every quantisation block: the rows
// dequantised (zero term added) to F32 in `owned`. The weights are exact; the matmul then runs on
// f32 activations where the whole model converts them to the block type's activation blocks.
Result<kernels::WeightView> dequantised_columns_of(const kernels::WeightView& w, int64_t c0,
                                                   int64_t n,
                                                   std::vector<std::vector<uint8_t>>& owned) {
  auto total = checked_mul<uint64_t>(static_cast<uint64_t>(n) * sizeof(float),
                                     static_cast<uint64_t>(w.rows));
  if (!total) return out_of_range("tensor '{}' shard size overflows", std::string(w.name));
  std::vector<uint8_t>& buf = owned.emplace_back(static_cast<size_t>(*total));
  std::vector<float> row(static_cast<size_t>(w.cols)), scratch(static_cast<size_t>(w.cols));
  const size_t row_bytes = static_cast<size_t>(n) * sizeof(float);
  for (int64_t r = 0; r < w.rows; ++r) {
    kernels::dequantize_weight_row(w, r, row.data(), scratch.data());
    std::memcpy(buf.data() + static_cast<size_t>(r) * row_bytes, row.data() + c0, row_bytes);
  }
  release_pages(w.data, w.data + static_cast<size_t>(w.rows) * w.row_bytes);
  kernels::WeightView out;
  out.dtype = tensor::DType::kF32;
  out.rows = w.rows;
  out.cols = n;
  out.row_bytes = row_bytes;
  out.data = buf.data();
  out.name = w.name;
  return out;
}

// Rows order[0..n) of w (any order), copied into `owned` with their zero term (stride n).
Result<kernels::WeightView> gathered_rows_of(const kernels::WeightView& w, const int32_t* order,
                                             int64_t n, std::vector<std::vector<uint8_t>>& owned) {
  if (w.data == nullptr) return w;  // no gate (an ungated FFN)
  for (int64_t i = 0; i < n; ++i) {
    if (order[i] < 0 || order[i] >= w.rows) {
      return invalid_argument(
          "tensor '{}' cannot be split by tensor parallelism: the act-order input order of the "
          "FFN's down projection names feature {}, outside its {} rows",
          std::string(w.name), order[i], w.rows);
    }
  }
  auto total = checked_mul<uint64_t>(w.row_bytes, static_cast<uint64_t>(n));
  if (!total) return out_of_range("tensor '{}' shard size overflows", std::string(w.name));
  std::vector<uint8_t>& buf = owned.emplace_back(static_cast<size_t>(*total));
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(buf.data() + static_cast<size_t>(i) * w.row_bytes, w.row(order[i]), w.row_bytes);
  }
  kernels::WeightView out = w;
  out.rows = n;
  out.data = buf.data();
  out.packed = nullptr;
  if (w.zero_term != nullptr) {
    const int64_t groups = w.zero_groups();
    std::vector<uint8_t>& zb =
        owned.emplace_back(static_cast<size_t>(groups * n) * sizeof(float));  // <= w's term
    float* z = reinterpret_cast<float*>(zb.data());
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t i = 0; i < n; ++i)
        z[g * n + i] = w.zero_term[g * w.zero_stride + order[i]];
    }
    out.zero_term = z;
    out.zero_stride = n;
  }
  release_pages(w.data, w.data + static_cast<size_t>(w.rows) * w.row_bytes);
  return out;
}

// Rows [f0, f0 + n) of gate and up, those input columns of down. An act-order down (input order
// set) keeps stored columns [f0, f0 + n) instead, a contiguous run of blocks and groups, and the
// rank computes the intermediate features those columns hold, input_order[f0 + i] at local
// position i: the matching rows of gate and up are gathered (rows are independent, so this is
// exact), which makes the local input order the identity.
Status split_ffn(FfnWeights& f, int64_t f0, int64_t n, std::vector<std::vector<uint8_t>>& owned) {
  if (f.down.input_order != nullptr) {
    const int32_t* features = f.down.input_order + f0;
    PAGODA_ASSIGN_OR_RETURN(f.gate, gathered_rows_of(f.gate, features, n, owned));
    PAGODA_ASSIGN_OR_RETURN(f.up, gathered_rows_of(f.up, features, n, owned));
    kernels::WeightView stored = f.down;
    stored.input_order = nullptr;
    PAGODA_ASSIGN_OR_RETURN(f.down, columns_of(stored, f0, n, owned));
    return Status();
  }
  f.gate = rows_of(f.gate, f0, n);
  f.up = rows_of(f.up, f0, n);
  PAGODA_ASSIGN_OR_RETURN(f.down, columns_of(f.down, f0, n, owned));
  return Status();
}

// wo's input columns [q0, q0 + n) (this rank's query heads): as columns_of, or, for an act-order
// weight, dequantised (counted in the shard, which logs the memory it costs).
Result<kernels::WeightView> wo_columns_of(const kernels::WeightView& w, int64_t q0, int64_t n,
                                          TensorShard& shard) {
  if (w.input_order == nullptr) return columns_of(w, q0, n, shard.owned);
  shard.dequantised_tensors += 1;
  shard.dequantised_bytes += static_cast<uint64_t>(w.rows) * static_cast<uint64_t>(n) * 4;
  return dequantised_columns_of(w, q0, n, shard.owned);
}

// The router is replicated so every rank routes every token alike; the all-reduce after the
// block adds up each token's expert outputs from the ranks. Expert parallelism: rank r keeps
// experts [r*E/n, (r+1)*E/n) whole (the others become empty views, which moe_block skips and
// nothing loads). Otherwise every expert is split like a dense FFN (rows of gate/up, those input
// columns of down), each rank computing its part of every expert. A shared expert is always split
// like a dense FFN.
Status shard_experts(const ModelConfig& local, int32_t rank, int32_t size, bool expert_parallel,
                     MoeWeights& moe, std::vector<std::vector<uint8_t>>& owned) {
  const auto per_rank = static_cast<int64_t>(moe.experts.size()) / size;
  for (int64_t e = 0; e < static_cast<int64_t>(moe.experts.size()); ++e) {
    FfnWeights& expert = moe.experts[static_cast<size_t>(e)];
    if (!expert_parallel) {
      const int64_t n = local.expert_ffn_dim;
      if (expert.down.rows > 0) {
        PAGODA_RETURN_IF_ERROR(split_ffn(expert, int64_t{rank} * n, n, owned));
      }
      continue;
    }
    if (e / per_rank != rank) {
      const FfnActivation act = moe.experts[static_cast<size_t>(e)].activation;
      moe.experts[static_cast<size_t>(e)] = FfnWeights{};
      moe.experts[static_cast<size_t>(e)].activation = act;
    }
  }
  if (moe.shared) {
    const int64_t n = local.shared_expert_ffn_dim;
    PAGODA_RETURN_IF_ERROR(split_ffn(*moe.shared, int64_t{rank} * n, n, owned));
  }
  return Status();
}

// MLA (vLLM's split): the compressions (attn_q_a and its norm, attn_kv_a_mqa and its norm, so the
// latent and the rope key) are replicated, and so is the latent cache (model::kv_layout: one row
// per token, every head reads it); rank r keeps query heads [r*H/n, (r+1)*H/n): their rows of
// attn_q_b (or attn_q), their per-head f32 copies of attn_kv_b (w_uk, w_uv_t: contiguous by head)
// and those input columns of attn_output (row-parallel: the attention all-reduce sums them).
Status shard_mla(const ModelConfig& local, int32_t rank, MlaWeights& m,
                 std::vector<std::vector<uint8_t>>& owned) {
  const int64_t heads = local.num_heads, h0 = int64_t{rank} * heads;
  const int64_t hd = local.head_dim, nope = local.head_dim - local.rope_dims;
  const int64_t vd = local.value_dim(), lora = local.kv_lora_rank;
  if (local.q_lora_rank > 0) {
    m.wq_b = rows_of(m.wq_b, h0 * hd, heads * hd);
  } else {
    m.wq = rows_of(m.wq, h0 * hd, heads * hd);
  }
  m.w_uk = part_of(m.w_uk, h0 * nope * lora, heads * nope * lora);
  m.w_uv_t = part_of(m.w_uv_t, h0 * lora * vd, heads * lora * vd);
  PAGODA_ASSIGN_OR_RETURN(m.wo, columns_of(m.wo, h0 * vd, heads * vd, owned));
  return Status();
}

// Moves shard.owned into an unlinked temporary file ($TMPDIR, else /tmp) mapped back read-only
// and points the views at it (see TensorShard::spill). Keeps the heap copies when the file cannot
// be made.
void spill_owned(TensorShard& shard, DecoderWeights& w) {
  if (shard.owned.empty()) return;
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir != nullptr && *dir != 0 ? dir : "/tmp") + "/pagoda-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return;
  std::vector<size_t> offsets;
  size_t total = 0;
  bool written = true;
  static constexpr uint8_t kPad[64] = {};
  for (const std::vector<uint8_t>& b : shard.owned) {
    // Each copy starts on 64 bytes (zero terms and dequantised rows are floats).
    const size_t pad = (64 - total % 64) % 64;
    if (pad > 0 && ::write(fd, kPad, pad) != static_cast<ssize_t>(pad)) written = false;
    total += pad;
    offsets.push_back(total);
    total += b.size();
    for (size_t done = 0; written && done < b.size();) {
      const ssize_t n = ::write(fd, b.data() + done, b.size() - done);
      if (n <= 0) written = false;
      done += n > 0 ? static_cast<size_t>(n) : 0;
    }
  }
  auto mapped = written ? MappedFile::open(path) : Result<MappedFile>(io_error("write failed"));
  ::unlink(path.c_str());
  ::close(fd);
  if (!mapped.ok() || mapped->size() != total) return;
  size_t moved = 0;
  auto rebase_ptr = [&]<typename T>(const T*& p) {
    const auto* at = reinterpret_cast<const uint8_t*>(p);
    for (size_t i = 0; at != nullptr && i < shard.owned.size(); ++i) {
      const uint8_t* b = shard.owned[i].data();
      if (at >= b && at < b + shard.owned[i].size()) {
        p = reinterpret_cast<const T*>(mapped->data() + offsets[i] + static_cast<size_t>(at - b));
        ++moved;
        return;
      }
    }
  };
  auto rebase = [&](kernels::WeightView& v) {
    rebase_ptr(v.data);
    rebase_ptr(v.zero_term);
  };
  auto rebase_ffn = [&](FfnWeights& f) {
    rebase(f.gate);  // gathered rows (act-order down)
    rebase(f.up);
    rebase(f.down);
  };
  for (DecoderLayer& L : w.layers) {
    rebase(L.attn.wo);
    if (L.mla) rebase(L.mla->wo);
    rebase_ffn(L.ffn);
    if (L.moe && L.moe->shared) rebase_ffn(*L.moe->shared);
    if (L.moe) {
      for (FfnWeights& e : L.moe->experts)
        rebase_ffn(e);
    }
  }
  PAGODA_CHECK(moved == shard.owned.size());  // every copy had exactly one pointer
  shard.spill = std::move(mapped).value();
  shard.owned.clear();
}

}  // namespace

Result<ModelConfig> shard_config(const ModelConfig& full, int32_t rank, int32_t size,
                                 bool expert_parallel) {
  if (size < 1 || rank < 0 || rank >= size) {
    return invalid_argument("tensor-parallel rank {} of {} is out of range", rank, size);
  }
  ModelConfig c = full;
  if (size == 1) return c;
  if (full.mla() && full.num_heads % size != 0) {
    // MLA splits by query head only (the latent and its cache are replicated: shard_mla).
    return invalid_argument(
        "{}: MLA attention splits by head: num_heads {} is not divisible by "
        "--tensor-parallel-size {}",
        full.arch, full.num_heads, size);
  }
  // MoE models may mix in dense layers (DeepSeek's leading ones, Qwen-MoE's mlp_only_layers):
  // those split like any FFN (feed_forward_length); the MoE layers split every expert's width, or
  // keep whole experts per rank under expert parallelism.
  const bool dense_ffn =
      full.num_experts == 0 || full.leading_dense_layers > 0 || !full.dense_layers.empty();
  if (full.num_experts > 0) {
    if (expert_parallel && full.num_experts % size != 0) {
      return invalid_argument(
          "expert_count {} is not divisible by --tensor-parallel-size {} (--expert-parallel)",
          full.num_experts, size);
    }
    if (!expert_parallel && full.expert_ffn() % size != 0) {
      return invalid_argument(
          "expert_feed_forward_length {} is not divisible by --tensor-parallel-size {} (or keep "
          "whole experts per rank: --expert-parallel)",
          full.expert_ffn(), size);
    }
    if (full.shared_expert_ffn_dim % size != 0) {
      return invalid_argument(
          "expert_shared_feed_forward_length {} is not divisible by --tensor-parallel-size {}",
          full.shared_expert_ffn_dim, size);
    }
  }
  if (dense_ffn && full.ffn_dim % size != 0) {
    return invalid_argument("feed_forward_length {} is not divisible by --tensor-parallel-size {}",
                            full.ffn_dim, size);
  }
  if (full.num_kv_heads % size != 0) {
    return invalid_argument("num_kv_heads {} is not divisible by --tensor-parallel-size {}",
                            full.num_kv_heads, size);
  }
  if (full.num_heads % size != 0) {
    return invalid_argument("num_heads {} is not divisible by --tensor-parallel-size {}",
                            full.num_heads, size);
  }
  if (full.vocab_size < size) {
    return invalid_argument("vocab_size {} is smaller than --tensor-parallel-size {}",
                            full.vocab_size, size);
  }
  c.num_heads = full.num_heads / size;
  c.num_kv_heads = full.num_kv_heads / size;
  if (full.num_experts > 0) {
    c.shared_expert_ffn_dim = full.shared_expert_ffn_dim / size;
    // Whole experts, or each rank's share of every expert (its width no longer ffn_dim's).
    c.expert_ffn_dim = expert_parallel ? full.expert_ffn() : full.expert_ffn() / size;
  }
  if (dense_ffn) c.ffn_dim = full.ffn_dim / size;
  return c;
}

Result<TensorShard> shard_decoder_weights(const ModelConfig& full, int32_t rank, int32_t size,
                                          bool expert_parallel, DecoderWeights& w) {
  PAGODA_ASSIGN_OR_RETURN(ModelConfig local, shard_config(full, rank, size, expert_parallel));
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
    if (L.mla) {
      PAGODA_RETURN_IF_ERROR(shard_mla(local, rank, *L.mla, shard.owned));
    } else {
      a.wq = rows_of(a.wq, q0, qn);
      a.wk = rows_of(a.wk, k0, kn);
      a.wv = rows_of(a.wv, k0, kn);
      a.bq = part_of(a.bq, q0, qn);
      a.bk = part_of(a.bk, k0, kn);
      a.bv = part_of(a.bv, k0, kn);
      PAGODA_ASSIGN_OR_RETURN(a.wo, wo_columns_of(a.wo, q0, qn, shard));
    }
    if (L.moe) {
      PAGODA_RETURN_IF_ERROR(
          shard_experts(local, rank, size, expert_parallel, *L.moe, shard.owned));
      continue;
    }
    PAGODA_RETURN_IF_ERROR(split_ffn(L.ffn, f0, fn, shard.owned));
  }
  // (A pipeline stage other than the last has no output head.)
  if (w.output.data != nullptr) w.output = rows_of(w.output, shard.vocab_begin, shard.vocab_count);
  if (shard.dequantised_tensors > 0) {
    PAGODA_LOG_WARN(
        "tensor parallelism: {} act-order attention output matrices (wo) keep this rank's input "
        "columns as F32 rows ({:.1f} MiB): their heads' inputs are scattered over every "
        "quantisation block",
        shard.dequantised_tensors, static_cast<double>(shard.dequantised_bytes) / (1 << 20));
  }
  spill_owned(shard, w);
  return shard;
}

}  // namespace pagoda::model
