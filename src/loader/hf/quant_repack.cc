// GPTQ / AWQ (integer codes with per-group F16 scales and zero points) → Q4_0 / Q5_0 / Q8_0 (with
// an input order for act-order, a zero term for zero points) / F32, and the dispatch for every
// method (the float formats are in float_quant_repack.cc).
#include "loader/hf/quant_repack.h"

#include <algorithm>
#include <cstring>

#include "base/checked_math.h"
#include "loader/hf/quant_repack_detail.h"
#include "tensor/float16.h"

namespace pagoda::loader {
namespace {

using format::HfQuantConfig;
using format::HfQuantMethod;
using format::StDType;
using format::StTensor;
using quant_detail::check_dims;
using quant_detail::need;

// Integer codes of one Linear: W[n][k] = scales[g][n] * (q[n][k] - zeros[g][n]), g = group[k].
struct GroupedInts {
  int bits = 0;  // of q: 4 or 8
  int64_t rows = 0, cols = 0, num_groups = 0;
  std::vector<uint8_t> q;        // [rows, cols]
  std::vector<int32_t> zeros;    // [num_groups, rows]
  std::vector<uint16_t> scales;  // [num_groups, rows], F16 bits
  std::vector<int32_t> group;    // [cols]
};

uint32_t word_at(const StTensor& t, uint64_t i) {
  uint32_t v;
  std::memcpy(&v, t.data + i * 4, 4);
  return v;
}

uint16_t half_at(const StTensor& t, uint64_t i) {
  uint16_t v;
  std::memcpy(&v, t.data + i * 2, 2);
  return v;
}

Status check_shape(const StTensor& t, std::initializer_list<uint64_t> want) {
  if (t.shape.size() == want.size() && std::equal(want.begin(), want.end(), t.shape.begin())) {
    return Status();
  }
  std::string w;
  for (uint64_t d : want)
    w += (w.empty() ? "" : ", ") + std::to_string(d);
  std::string got;
  for (uint64_t d : t.shape)
    got += (got.empty() ? "" : ", ") + std::to_string(d);
  return invalid_argument("tensor \"{}\" has shape [{}], expected [{}]", t.name, got, w);
}

Status check_scales(const StTensor& t) {
  for (uint64_t i = 0; i < t.num_elements; ++i) {
    if ((half_at(t, i) & 0x7c00u) == 0x7c00u) {
      return invalid_argument("tensor \"{}\" holds a non-finite scale at element {}", t.name, i);
    }
  }
  return Status();
}

Result<GroupedInts> unpack_gptq(const HfQuantConfig& c, const std::string& p,
                                const StTensorLookup& lookup, int64_t max_elements,
                                std::vector<std::string>* used) {
  PAGODA_ASSIGN_OR_RETURN(const StTensor* qw, need(lookup, p + ".qweight", StDType::kI32, used));
  PAGODA_ASSIGN_OR_RETURN(const StTensor* qz, need(lookup, p + ".qzeros", StDType::kI32, used));
  PAGODA_ASSIGN_OR_RETURN(const StTensor* sc, need(lookup, p + ".scales", StDType::kF16, used));
  const int bits = c.bits;
  const int64_t pack = 32 / bits;
  const uint32_t mask = (1u << bits) - 1;
  if (qw->shape.size() != 2) return invalid_argument("tensor \"{}\" is not 2-D", qw->name);
  GroupedInts g;
  g.bits = bits;
  g.rows = static_cast<int64_t>(qw->shape[1]);
  g.cols = static_cast<int64_t>(qw->shape[0]) * pack;
  PAGODA_RETURN_IF_ERROR(check_dims(qw->name, g.rows, g.cols, max_elements));
  if (g.rows % pack != 0) {
    return invalid_argument("tensor \"{}\": {} outputs is not a multiple of {} ({}-bit qzeros)",
                            qw->name, g.rows, pack, bits);
  }
  g.num_groups = c.group_size < 0 ? 1 : (g.cols + c.group_size - 1) / c.group_size;
  PAGODA_RETURN_IF_ERROR(check_shape(
      *qz, {static_cast<uint64_t>(g.num_groups), static_cast<uint64_t>(g.rows / pack)}));
  PAGODA_RETURN_IF_ERROR(
      check_shape(*sc, {static_cast<uint64_t>(g.num_groups), static_cast<uint64_t>(g.rows)}));
  PAGODA_RETURN_IF_ERROR(check_scales(*sc));
  g.group.resize(static_cast<size_t>(g.cols));
  if (const StTensor* gi = lookup(p + ".g_idx")) {
    if (used != nullptr) used->push_back(gi->name);
    if (gi->dtype != StDType::kI32) {
      return invalid_argument("tensor \"{}\" has dtype {}, not I32", gi->name,
                              format::st_dtype_name(gi->dtype));
    }
    PAGODA_RETURN_IF_ERROR(check_shape(*gi, {static_cast<uint64_t>(g.cols)}));
    for (int64_t k = 0; k < g.cols; ++k) {
      const auto v = static_cast<int32_t>(word_at(*gi, static_cast<uint64_t>(k)));
      if (v < 0 || v >= g.num_groups) {
        return invalid_argument("tensor \"{}\": g_idx[{}] = {} is outside [0, {})", gi->name, k, v,
                                g.num_groups);
      }
      g.group[static_cast<size_t>(k)] = v;
    }
  } else {
    if (c.desc_act) return not_found("tensor \"{}.g_idx\" is missing (desc_act is true)", p);
    for (int64_t k = 0; k < g.cols; ++k)
      g.group[static_cast<size_t>(k)] =
          c.group_size < 0 ? 0 : static_cast<int32_t>(k / c.group_size);
  }
  const auto rows = static_cast<size_t>(g.rows), cols = static_cast<size_t>(g.cols);
  g.q.resize(rows * cols);
  for (size_t kw = 0; kw < cols / static_cast<size_t>(pack); ++kw) {
    for (size_t n = 0; n < rows; ++n) {
      const uint32_t w = word_at(*qw, kw * rows + n);
      for (int64_t j = 0; j < pack; ++j) {
        g.q[n * cols + kw * static_cast<size_t>(pack) + static_cast<size_t>(j)] =
            static_cast<uint8_t>((w >> (bits * j)) & mask);
      }
    }
  }
  const size_t groups = static_cast<size_t>(g.num_groups);
  g.zeros.resize(groups * rows);
  g.scales.resize(groups * rows);
  for (size_t gr = 0; gr < groups; ++gr) {
    for (size_t n = 0; n < rows; ++n) {
      const uint32_t w =
          word_at(*qz, gr * (rows / static_cast<size_t>(pack)) + n / static_cast<size_t>(pack));
      const auto z = static_cast<int32_t>(
          (w >> (bits * static_cast<int>(n % static_cast<size_t>(pack)))) & mask);
      g.zeros[gr * rows + n] = c.zeros_minus_one ? z + 1 : z;
      g.scales[gr * rows + n] = half_at(*sc, gr * rows + n);
    }
  }
  return g;
}

Result<GroupedInts> unpack_awq(const HfQuantConfig& c, const std::string& p,
                               const StTensorLookup& lookup, int64_t max_elements,
                               std::vector<std::string>* used) {
  static constexpr int kOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};
  PAGODA_ASSIGN_OR_RETURN(const StTensor* qw, need(lookup, p + ".qweight", StDType::kI32, used));
  PAGODA_ASSIGN_OR_RETURN(const StTensor* qz, need(lookup, p + ".qzeros", StDType::kI32, used));
  PAGODA_ASSIGN_OR_RETURN(const StTensor* sc, need(lookup, p + ".scales", StDType::kF16, used));
  if (qw->shape.size() != 2) return invalid_argument("tensor \"{}\" is not 2-D", qw->name);
  GroupedInts g;
  g.bits = 4;
  g.cols = static_cast<int64_t>(qw->shape[0]);
  g.rows = static_cast<int64_t>(qw->shape[1]) * 8;
  PAGODA_RETURN_IF_ERROR(check_dims(qw->name, g.rows, g.cols, max_elements));
  if (g.cols % c.group_size != 0) {
    return invalid_argument("tensor \"{}\": {} inputs is not a multiple of group_size {}", qw->name,
                            g.cols, c.group_size);
  }
  g.num_groups = g.cols / c.group_size;
  const auto rows = static_cast<size_t>(g.rows), cols = static_cast<size_t>(g.cols);
  const size_t groups = static_cast<size_t>(g.num_groups);
  PAGODA_RETURN_IF_ERROR(check_shape(*qz, {groups, rows / 8}));
  PAGODA_RETURN_IF_ERROR(check_shape(*sc, {groups, rows}));
  PAGODA_RETURN_IF_ERROR(check_scales(*sc));
  g.group.resize(cols);
  for (size_t k = 0; k < cols; ++k)
    g.group[k] = static_cast<int32_t>(k / static_cast<size_t>(c.group_size));
  g.q.resize(rows * cols);
  for (size_t k = 0; k < cols; ++k) {
    for (size_t w8 = 0; w8 < rows / 8; ++w8) {
      const uint32_t w = word_at(*qw, k * (rows / 8) + w8);
      for (int i = 0; i < 8; ++i)
        g.q[(w8 * 8 + static_cast<size_t>(kOrder[i])) * cols + k] = (w >> (4 * i)) & 0xfu;
    }
  }
  g.zeros.resize(groups * rows);
  g.scales.resize(groups * rows);
  for (size_t gr = 0; gr < groups; ++gr) {
    for (size_t w8 = 0; w8 < rows / 8; ++w8) {
      const uint32_t w = word_at(*qz, gr * (rows / 8) + w8);
      for (int i = 0; i < 8; ++i)
        g.zeros[gr * rows + w8 * 8 + static_cast<size_t>(kOrder[i])] = (w >> (4 * i)) & 0xfu;
    }
    for (size_t n = 0; n < rows; ++n)
      g.scales[gr * rows + n] = half_at(*sc, gr * rows + n);
  }
  return g;
}

// One 32-element block of offsets d = q - z (in the block type's range) with F16 scale `s`.
void write_block(tensor::DType type, uint16_t s, const int32_t* d, uint8_t* out) {
  std::memcpy(out, &s, 2);
  if (type == tensor::DType::kQ8_0) {
    for (int j = 0; j < 32; ++j)
      out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(d[j]));
  } else if (type == tensor::DType::kQ4_0) {
    for (int j = 0; j < 16; ++j)
      out[2 + j] = static_cast<uint8_t>((d[j] + 8) | ((d[j + 16] + 8) << 4));
  } else {  // Q5_0: x = d + 16 in [0, 32): low nibbles in qs, fifth bits in qh
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const auto lo = static_cast<uint32_t>(d[j] + 16), hi = static_cast<uint32_t>(d[j + 16] + 16);
      out[6 + j] = static_cast<uint8_t>((lo & 0xfu) | ((hi & 0xfu) << 4));
      qh |= ((lo >> 4) & 1u) << j;
      qh |= ((hi >> 4) & 1u) << (j + 16);
    }
    std::memcpy(out + 2, &qh, 4);
  }
}

// The inputs sorted by group, stably (a counting sort: groups are in [0, num_groups)).
std::vector<int32_t> group_order(const GroupedInts& g) {
  std::vector<size_t> start(static_cast<size_t>(g.num_groups) + 1, 0);
  for (int32_t gr : g.group)
    ++start[static_cast<size_t>(gr) + 1];
  for (size_t i = 1; i < start.size(); ++i)
    start[i] += start[i - 1];
  std::vector<int32_t> order(g.group.size());
  for (size_t k = 0; k < g.group.size(); ++k)
    order[start[static_cast<size_t>(g.group[k])]++] = static_cast<int32_t>(k);
  return order;
}

// The stored group size G when stored column j is in group j / G for every j (groups sorted,
// each but the last exactly G columns, none empty) and G is a multiple of 32; else 0.
int64_t regular_group(const GroupedInts& g, const std::vector<int32_t>& order) {
  const auto col_of = [&order](size_t j) {
    return order.empty() ? j : static_cast<size_t>(order[j]);
  };
  int64_t size = 0;
  while (size < g.cols && g.group[col_of(static_cast<size_t>(size))] == 0)
    ++size;
  if (size == 0 || size % 32 != 0 || (g.cols + size - 1) / size != g.num_groups) return 0;
  for (int64_t j = 0; j < g.cols; ++j) {
    if (g.group[col_of(static_cast<size_t>(j))] != j / size) return 0;
  }
  return size;
}

RepackedWeight pack_grouped(const GroupedInts& g) {
  const auto rows = static_cast<size_t>(g.rows), cols = static_cast<size_t>(g.cols);
  // Stored column j holds input col_of(j): file order, or sorted by group (act-order).
  std::vector<int32_t> order;
  if (!std::is_sorted(g.group.begin(), g.group.end())) order = group_order(g);
  const auto col_of = [&order](size_t j) {
    return order.empty() ? j : static_cast<size_t>(order[j]);
  };
  bool uniform = cols % 32 == 0;  // every aligned 32-run of stored columns one group's
  for (size_t b = 0; uniform && b < cols; b += 32) {
    for (size_t k = b + 1; k < b + 32; ++k)
      uniform = uniform && g.group[col_of(k)] == g.group[col_of(b)];
  }
  int32_t lo = 0, hi = 0;
  for (size_t n = 0; n < rows; ++n) {
    for (size_t k = 0; k < cols; ++k) {
      const int32_t d = g.q[n * cols + k] - g.zeros[static_cast<size_t>(g.group[k]) * rows + n];
      lo = std::min(lo, d);
      hi = std::max(hi, d);
    }
  }
  RepackedWeight out;
  out.rows = g.rows;
  out.cols = g.cols;
  // Levels around the block type's own offset, with the zero points as a term of their own:
  // s (q - z) = s (q - offset) + s (offset - z), both exact in f32, and so is their sum.
  const int32_t offset = g.bits == 4 ? 8 : 128;
  const int64_t zero_group = uniform && g.bits != 0 ? regular_group(g, order) : 0;
  const bool zero_term = zero_group > 0 && !(lo >= -offset && hi < offset);
  if (zero_term || (uniform && lo >= -128 && hi <= 127)) {
    out.dtype = zero_term             ? (g.bits == 4 ? tensor::DType::kQ4_0 : tensor::DType::kQ8_0)
                : lo >= -8 && hi <= 7 ? tensor::DType::kQ4_0
                : lo >= -16 && hi <= 15 ? tensor::DType::kQ5_0
                                        : tensor::DType::kQ8_0;
    const size_t block_bytes = tensor::dtype_info(out.dtype).type_size;
    out.bytes.resize(rows * (cols / 32) * block_bytes);
    int32_t d[32];
    uint8_t* dst = out.bytes.data();
    for (size_t n = 0; n < rows; ++n) {
      for (size_t b = 0; b < cols; b += 32, dst += block_bytes) {
        const size_t gi = static_cast<size_t>(g.group[col_of(b)]) * rows + n;
        const int32_t z = zero_term ? offset : g.zeros[gi];
        for (size_t j = 0; j < 32; ++j)
          d[j] = g.q[n * cols + col_of(b + j)] - z;
        write_block(out.dtype, g.scales[gi], d, dst);
      }
    }
    if (zero_term) {  // [groups, rows]: group-major, as the scales
      out.zero_group = zero_group;
      out.zero_term.resize(static_cast<size_t>(g.num_groups) * rows);
      for (size_t i = 0; i < out.zero_term.size(); ++i)
        out.zero_term[i] =
            tensor::fp16_to_fp32(g.scales[i]) * static_cast<float>(offset - g.zeros[i]);
    }
    out.input_order = std::move(order);
    return out;
  }
  out.dtype = tensor::DType::kF32;
  out.bytes.resize(rows * cols * sizeof(float));
  std::vector<float> row(cols);
  for (size_t n = 0; n < rows; ++n) {
    for (size_t k = 0; k < cols; ++k) {
      const size_t gi = static_cast<size_t>(g.group[k]) * rows + n;
      row[k] = tensor::fp16_to_fp32(g.scales[gi]) *
               static_cast<float>(g.q[n * cols + k] - g.zeros[gi]);  // exact: 11 x 9 bits
    }
    std::memcpy(out.bytes.data() + n * cols * sizeof(float), row.data(), cols * sizeof(float));
  }
  return out;
}

constexpr std::string_view kGptqAwqCompanions[] = {".qzeros", ".scales", ".g_idx"};
constexpr std::string_view kFloatCompanions[] = {".weight_scale", ".weight_scale_inv",
                                                 ".input_scale", ".weight_zero_point",
                                                 ".input_zero_point"};
constexpr std::string_view kNf4Companions[] = {".weight.absmax", ".weight.quant_map",
                                               ".weight.nested_absmax", ".weight.nested_quant_map",
                                               ".weight.quant_state.bitsandbytes__nf4"};

}  // namespace

namespace quant_detail {

Status check_dims(const std::string& name, int64_t rows, int64_t cols, int64_t max_elements) {
  const auto n = checked_mul<int64_t>(rows, cols);
  if (rows <= 0 || cols <= 0 || !n || *n > max_elements) {
    return invalid_argument("tensor \"{}\": a [{}, {}] weight is larger than any of this model",
                            name, rows, cols);
  }
  return Status();
}

Result<const StTensor*> need(const StTensorLookup& lookup, const std::string& name, StDType dtype,
                             std::vector<std::string>* used) {
  const StTensor* t = lookup(name);
  if (t == nullptr) return not_found("tensor \"{}\" is missing", name);
  if (used != nullptr) used->push_back(name);
  if (t->dtype != dtype) {
    return invalid_argument("tensor \"{}\" has dtype {}, not {}", name,
                            format::st_dtype_name(t->dtype), format::st_dtype_name(dtype));
  }
  return t;
}

}  // namespace quant_detail

std::string quantized_linear_prefix(const HfQuantConfig& c, const StTensor& t) {
  auto strip = [&t](std::string_view suffix) {
    std::string_view n = t.name;
    return n.ends_with(suffix) ? std::string(n.substr(0, n.size() - suffix.size())) : "";
  };
  switch (c.method) {
    case HfQuantMethod::kGptq:
    case HfQuantMethod::kAwq:
      return strip(".qweight");
    case HfQuantMethod::kFp8:
      return t.dtype == StDType::kF8_E4M3 ? strip(".weight") : "";
    case HfQuantMethod::kInt8:
      return t.dtype == StDType::kI8 ? strip(".weight") : "";
    case HfQuantMethod::kNf4:
      return t.dtype == StDType::kU8 ? strip(".weight") : "";
  }
  return "";
}

bool is_quant_companion(const HfQuantConfig& c, std::string_view name) {
  auto any = [name](const auto& list) {
    return std::any_of(std::begin(list), std::end(list),
                       [name](std::string_view s) { return name.ends_with(s); });
  };
  switch (c.method) {
    case HfQuantMethod::kGptq:
    case HfQuantMethod::kAwq:
      return any(kGptqAwqCompanions);
    case HfQuantMethod::kFp8:
    case HfQuantMethod::kInt8:
      return any(kFloatCompanions);
    case HfQuantMethod::kNf4:
      return any(kNf4Companions);
  }
  return false;
}

Result<RepackedWeight> repack_quantized_linear(const HfQuantConfig& c, const std::string& prefix,
                                               const StTensorLookup& lookup, int64_t max_elements,
                                               std::vector<std::string>* companions) {
  switch (c.method) {
    case HfQuantMethod::kGptq: {
      PAGODA_ASSIGN_OR_RETURN(GroupedInts g,
                              unpack_gptq(c, prefix, lookup, max_elements, companions));
      return pack_grouped(g);
    }
    case HfQuantMethod::kAwq: {
      PAGODA_ASSIGN_OR_RETURN(GroupedInts g,
                              unpack_awq(c, prefix, lookup, max_elements, companions));
      return pack_grouped(g);
    }
    case HfQuantMethod::kFp8:
      return quant_detail::repack_fp8(c, prefix, lookup, max_elements, companions);
    case HfQuantMethod::kInt8:
      return quant_detail::repack_int8(prefix, lookup, max_elements, companions);
    case HfQuantMethod::kNf4:
      return quant_detail::repack_nf4(prefix, lookup, max_elements, companions);
  }
  return internal_error("unknown quantisation method");
}

}  // namespace pagoda::loader
