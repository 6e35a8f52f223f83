// FP8 (e4m3 with f32 scales), INT8 (per-channel scales) and bitsandbytes NF4 Linears → Q8_0 /
// F16 / BF16 / F32 with their exact dequantised values (quant_repack.h).
#include <cmath>
#include <cstring>

#include "base/checked_math.h"
#include "loader/hf/quant_repack_detail.h"
#include "tensor/float16.h"

namespace pagoda::loader::quant_detail {
namespace {

using format::HfQuantConfig;
using format::StDType;
using format::StTensor;

// float8_e4m3fn: 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinities, S.1111.111 is NaN.
float fp8_e4m3_to_f32(uint8_t b) {
  const int e = (b >> 3) & 0xf, m = b & 7;
  if (e == 0xf && m == 7) return NAN;
  const float mag = e == 0 ? std::ldexp(static_cast<float>(m), -9)
                           : std::ldexp(static_cast<float>(8 + m), e - 10);
  return (b & 0x80) ? -mag : mag;
}

Result<float> float_at(const StTensor& t, uint64_t i) {
  float v;
  if (t.dtype == StDType::kF32) {
    std::memcpy(&v, t.data + i * 4, 4);
  } else if (t.dtype == StDType::kF16 || t.dtype == StDType::kBF16) {
    uint16_t h;
    std::memcpy(&h, t.data + i * 2, 2);
    v = t.dtype == StDType::kF16 ? tensor::fp16_to_fp32(h) : tensor::bf16_to_fp32(h);
  } else {
    return invalid_argument("tensor \"{}\" has dtype {}, not F32, F16 or BF16", t.name,
                            format::st_dtype_name(t.dtype));
  }
  if (!std::isfinite(v)) {
    return invalid_argument("tensor \"{}\" holds a non-finite value at element {}", t.name, i);
  }
  return v;
}

// A weight scale: one value, one per output row, or one per [bo, bi] block.
struct Scales {
  std::vector<float> v;
  int64_t block_rows = 0, block_cols = 0, blocks_per_row = 1;  // block scales only
  bool per_row = false;
  float at(int64_t n, int64_t k) const {
    if (block_rows > 0) {
      return v[static_cast<size_t>((n / block_rows) * blocks_per_row + k / block_cols)];
    }
    return per_row ? v[static_cast<size_t>(n)] : v[0];
  }
};

Result<Scales> read_scales(const StTensor& s, int64_t rows, int64_t cols,
                           const std::vector<int64_t>& block) {
  Scales out;
  const auto& sh = s.shape;
  const auto urows = static_cast<uint64_t>(rows);
  if (s.num_elements == 1) {
  } else if ((sh.size() == 1 && sh[0] == urows) ||
             (sh.size() == 2 && sh[0] == urows && sh[1] == 1)) {
    out.per_row = true;
  } else if (block.size() == 2 && sh.size() == 2 &&
             sh[0] == static_cast<uint64_t>((rows + block[0] - 1) / block[0]) &&
             sh[1] == static_cast<uint64_t>((cols + block[1] - 1) / block[1])) {
    out.block_rows = block[0];
    out.block_cols = block[1];
    out.blocks_per_row = static_cast<int64_t>(sh[1]);
  } else {
    std::string got;
    for (uint64_t d : sh)
      got += (got.empty() ? "" : ", ") + std::to_string(d);
    return invalid_argument(
        "tensor \"{}\" has shape [{}]: not one scale, one per output ([{}] or [{}, 1]){}", s.name,
        got, rows, rows, block.size() == 2 ? " or one per weight_block_size block" : "");
  }
  out.v.resize(static_cast<size_t>(s.num_elements));
  for (uint64_t i = 0; i < s.num_elements; ++i) {
    PAGODA_ASSIGN_OR_RETURN(out.v[i], float_at(s, i));
  }
  return out;
}

bool all_f16(const std::vector<float>& v) {
  for (float x : v) {
    if (tensor::fp16_to_fp32(tensor::fp32_to_fp16(x)) != x) return false;
  }
  return true;
}

bool all_bf16(const std::vector<float>& v) {
  for (float x : v) {
    if (tensor::bf16_to_fp32(tensor::fp32_to_bf16(x)) != x) return false;
  }
  return true;
}

// Stores values exactly, in the narrowest of F16 / BF16 / F32 that holds every one.
RepackedWeight store_exact(const std::vector<float>& v, int64_t rows, int64_t cols) {
  RepackedWeight out;
  out.rows = rows;
  out.cols = cols;
  if (all_f16(v) || all_bf16(v)) {
    const bool f16 = all_f16(v);
    out.dtype = f16 ? tensor::DType::kF16 : tensor::DType::kBF16;
    out.bytes.resize(v.size() * 2);
    for (size_t i = 0; i < v.size(); ++i) {
      const uint16_t h = f16 ? tensor::fp32_to_fp16(v[i]) : tensor::fp32_to_bf16(v[i]);
      std::memcpy(out.bytes.data() + 2 * i, &h, 2);
    }
    return out;
  }
  out.dtype = tensor::DType::kF32;
  out.bytes.resize(v.size() * 4);
  std::memcpy(out.bytes.data(), v.data(), out.bytes.size());
  return out;
}

Result<const StTensor*> scale_tensor(const std::string& p, const StTensorLookup& lookup,
                                     std::vector<std::string>* used) {
  const StTensor* s = lookup(p + ".weight_scale");
  if (s == nullptr) s = lookup(p + ".weight_scale_inv");
  if (s == nullptr) return not_found("tensor \"{}.weight_scale\" is missing", p);
  if (used != nullptr) used->push_back(s->name);
  for (const char* extra : {".input_scale", ".input_zero_point"}) {
    if (const StTensor* t = lookup(p + extra); t != nullptr && used != nullptr) {
      used->push_back(t->name);
    }
  }
  return s;
}

Result<std::pair<int64_t, int64_t>> matrix_dims(const StTensor& w, int64_t max_elements) {
  if (w.shape.size() != 2) return invalid_argument("tensor \"{}\" is not 2-D", w.name);
  const auto rows = static_cast<int64_t>(w.shape[0]), cols = static_cast<int64_t>(w.shape[1]);
  PAGODA_RETURN_IF_ERROR(check_dims(w.name, rows, cols, max_elements));
  return std::make_pair(rows, cols);
}

}  // namespace

Result<RepackedWeight> repack_fp8(const HfQuantConfig& c, const std::string& p,
                                  const StTensorLookup& lookup, int64_t max_elements,
                                  std::vector<std::string>* used) {
  PAGODA_ASSIGN_OR_RETURN(const StTensor* w, need(lookup, p + ".weight", StDType::kF8_E4M3, used));
  PAGODA_ASSIGN_OR_RETURN(auto dims, matrix_dims(*w, max_elements));
  const auto [rows, cols] = dims;
  PAGODA_ASSIGN_OR_RETURN(const StTensor* s, scale_tensor(p, lookup, used));
  PAGODA_ASSIGN_OR_RETURN(Scales scales, read_scales(*s, rows, cols, c.weight_block_size));
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t k = 0; k < cols; ++k) {
      const size_t i = static_cast<size_t>(n * cols + k);
      const float x = fp8_e4m3_to_f32(w->data[i]);
      if (std::isnan(x)) {
        return invalid_argument("tensor \"{}\" holds NaN at element {}", w->name, i);
      }
      v[i] = x * scales.at(n, k);
    }
  }
  return store_exact(v, rows, cols);
}

Result<RepackedWeight> repack_int8(const std::string& p, const StTensorLookup& lookup,
                                   int64_t max_elements, std::vector<std::string>* used) {
  PAGODA_ASSIGN_OR_RETURN(const StTensor* w, need(lookup, p + ".weight", StDType::kI8, used));
  PAGODA_ASSIGN_OR_RETURN(auto dims, matrix_dims(*w, max_elements));
  const auto [rows, cols] = dims;
  PAGODA_ASSIGN_OR_RETURN(const StTensor* s, scale_tensor(p, lookup, used));
  PAGODA_ASSIGN_OR_RETURN(Scales scales, read_scales(*s, rows, cols, {}));
  if (const StTensor* z = lookup(p + ".weight_zero_point")) {
    if (used != nullptr) used->push_back(z->name);
    for (uint8_t b : z->bytes()) {
      if (b != 0) {
        return unimplemented("tensor \"{}\": non-zero (asymmetric) zero points are not supported",
                             z->name);
      }
    }
  }
  const auto* q = reinterpret_cast<const int8_t*>(w->data);
  if (cols % 32 == 0 && all_f16(scales.v)) {
    RepackedWeight out;
    out.dtype = tensor::DType::kQ8_0;
    out.rows = rows;
    out.cols = cols;
    out.bytes.resize(static_cast<size_t>(rows * (cols / 32)) * 34);
    uint8_t* dst = out.bytes.data();
    for (int64_t n = 0; n < rows; ++n) {
      const uint16_t d = tensor::fp32_to_fp16(scales.at(n, 0));
      for (int64_t b = 0; b < cols; b += 32, dst += 34) {
        std::memcpy(dst, &d, 2);
        std::memcpy(dst + 2, q + n * cols + b, 32);
      }
    }
    return out;
  }
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (int64_t n = 0; n < rows; ++n) {
    for (int64_t k = 0; k < cols; ++k) {
      v[static_cast<size_t>(n * cols + k)] = static_cast<float>(q[n * cols + k]) * scales.at(n, k);
    }
  }
  return store_exact(v, rows, cols);
}

Result<RepackedWeight> repack_nf4(const std::string& p, const StTensorLookup& lookup,
                                  int64_t max_elements, std::vector<std::string>* used) {
  const std::string state_name = p + ".weight.quant_state.bitsandbytes__nf4";
  PAGODA_ASSIGN_OR_RETURN(const StTensor* st, need(lookup, state_name, StDType::kU8, used));
  if (st->num_elements > (uint64_t{1} << 20)) {
    return invalid_argument("tensor \"{}\" is {} bytes, too long for a quant_state", st->name,
                            st->num_elements);
  }
  auto state = format::parse_bnb_quant_state(
      std::string_view(reinterpret_cast<const char*>(st->data), st->num_elements));
  if (!state.ok()) return state.status().with_context("tensor \"" + st->name + "\"");
  const int64_t rows = state->shape[0], cols = state->shape[1];
  PAGODA_RETURN_IF_ERROR(check_dims(p + ".weight", rows, cols, max_elements));
  const int64_t n = rows * cols;
  PAGODA_ASSIGN_OR_RETURN(const StTensor* w, need(lookup, p + ".weight", StDType::kU8, used));
  if (w->num_elements != static_cast<uint64_t>((n + 1) / 2)) {
    return invalid_argument("tensor \"{}\" holds {} bytes; a [{}, {}] NF4 weight needs {}", w->name,
                            w->num_elements, rows, cols, (n + 1) / 2);
  }
  PAGODA_ASSIGN_OR_RETURN(const StTensor* qm,
                          need(lookup, p + ".weight.quant_map", StDType::kF32, used));
  if (qm->num_elements != 16) {
    return invalid_argument("tensor \"{}\" has {} values, not 16", qm->name, qm->num_elements);
  }
  float code[16];
  for (uint64_t i = 0; i < 16; ++i) {
    PAGODA_ASSIGN_OR_RETURN(code[i], float_at(*qm, i));
  }
  const int64_t num_blocks = (n + state->blocksize - 1) / state->blocksize;
  std::vector<float> absmax(static_cast<size_t>(num_blocks));
  const std::string absmax_name = p + ".weight.absmax";
  if (state->nested) {
    PAGODA_ASSIGN_OR_RETURN(const StTensor* a, need(lookup, absmax_name, StDType::kU8, used));
    PAGODA_ASSIGN_OR_RETURN(const StTensor* na,
                            need(lookup, p + ".weight.nested_absmax", StDType::kF32, used));
    PAGODA_ASSIGN_OR_RETURN(const StTensor* nq,
                            need(lookup, p + ".weight.nested_quant_map", StDType::kF32, used));
    const int64_t nested_blocks =
        (num_blocks + state->nested_blocksize - 1) / state->nested_blocksize;
    if (a->num_elements != static_cast<uint64_t>(num_blocks) ||
        na->num_elements != static_cast<uint64_t>(nested_blocks) || nq->num_elements != 256) {
      return invalid_argument(
          "tensor \"{}\": absmax / nested_absmax / nested_quant_map hold {} / {} / {} values, "
          "expected {} / {} / 256",
          absmax_name, a->num_elements, na->num_elements, nq->num_elements, num_blocks,
          nested_blocks);
    }
    float nested_code[256];
    for (uint64_t i = 0; i < 256; ++i) {
      PAGODA_ASSIGN_OR_RETURN(nested_code[i], float_at(*nq, i));
    }
    for (int64_t b = 0; b < num_blocks; ++b) {
      PAGODA_ASSIGN_OR_RETURN(const float scale,
                              float_at(*na, static_cast<uint64_t>(b / state->nested_blocksize)));
      const float prod = nested_code[a->data[b]] * scale;
      absmax[static_cast<size_t>(b)] = prod + state->nested_offset;
    }
  } else {
    PAGODA_ASSIGN_OR_RETURN(const StTensor* a, need(lookup, absmax_name, StDType::kF32, used));
    if (a->num_elements != static_cast<uint64_t>(num_blocks)) {
      return invalid_argument("tensor \"{}\" has {} values, expected {}", a->name, a->num_elements,
                              num_blocks);
    }
    for (int64_t b = 0; b < num_blocks; ++b) {
      PAGODA_ASSIGN_OR_RETURN(absmax[static_cast<size_t>(b)],
                              float_at(*a, static_cast<uint64_t>(b)));
    }
  }
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t byte = w->data[i / 2];
    const int nib = (i % 2 == 0) ? byte >> 4 : byte & 0xf;
    float x = code[nib] * absmax[static_cast<size_t>(i / state->blocksize)];
    if (state->dtype == "float16") {
      x = tensor::fp16_to_fp32(tensor::fp32_to_fp16(x));
    } else if (state->dtype == "bfloat16") {
      x = tensor::bf16_to_fp32(tensor::fp32_to_bf16(x));
    }
    v[static_cast<size_t>(i)] = x;
  }
  return store_exact(v, rows, cols);
}

}  // namespace pagoda::loader::quant_detail
