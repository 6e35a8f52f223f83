// GGUF reader: a single forward pass over the header, metadata and tensor infos that checks every
// count against the bytes left before trusting it, then checks tensor data placement (alignment,
// bounds, overlap) and the well-known keys (gguf_validate.cc). Containers only grow by one
// parsed record at a time, so memory is proportional to what the file really contains.
#include "format/gguf_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "base/checked_math.h"
#include "format/gguf_validate.h"

namespace pagoda::format {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read as little-endian");

constexpr uint32_t kMagic = 0x46554747u;  // "GGUF" read as a little-endian u32
// Smallest possible records: key (u64 length + 1 byte) + u32 type + 1-byte value; tensor info:
// name (u64 length + 1 byte) + u32 n_dims + one u64 dim + u32 type + u64 offset.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;
constexpr uint32_t kMaxDims = 4;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string quoted(std::string_view s) {
  return fmt::format("'{}'", gguf_escape(s, 120));
}

// double -> float without undefined behaviour for values beyond float's range (they become inf).
float narrow_to_float(double d) {
  constexpr double kMax = std::numeric_limits<float>::max();
  if (d > kMax) return std::numeric_limits<float>::infinity();
  if (d < -kMax) return -std::numeric_limits<float>::infinity();
  return static_cast<float>(d);  // NaN stays NaN
}

std::string type_description(const GgufValue& v) {
  if (v.type == GgufType::kArray) return fmt::format("array of {}", gguf_type_name(v.elem_type));
  return std::string(gguf_type_name(v.type));
}

}  // namespace

class GgufParser {
 public:
  GgufParser(std::span<const uint8_t> bytes, GgufFile& file)
      : p_(bytes.data()), size_(bytes.size()), f_(file) {}

  Status parse() {
    PAGODA_RETURN_IF_ERROR(parse_header().with_context("header"));
    PAGODA_RETURN_IF_ERROR(parse_kvs());
    PAGODA_RETURN_IF_ERROR(parse_alignment());
    PAGODA_RETURN_IF_ERROR(parse_tensor_infos());
    return place_tensor_data();
  }

 private:
  uint64_t left() const { return size_ - pos_; }

  Status need(uint64_t n, std::string_view field) const {
    if (n <= left()) return Status();
    return invalid_argument("truncated: {} at offset {} needs {} bytes, {} left", field, pos_, n,
                            left());
  }
  uint32_t take_u32() {
    uint32_t v = load<uint32_t>(p_ + pos_);
    pos_ += 4;
    return v;
  }
  uint64_t take_u64() {
    uint64_t v = load<uint64_t>(p_ + pos_);
    pos_ += 8;
    return v;
  }
  Result<uint32_t> read_u32(std::string_view field) {
    PAGODA_RETURN_IF_ERROR(need(4, field));
    return take_u32();
  }
  Result<uint64_t> read_u64(std::string_view field) {
    PAGODA_RETURN_IF_ERROR(need(8, field));
    return take_u64();
  }
  // A string: u64 length + bytes (no terminator, any bytes).
  Result<std::string_view> read_string(std::string_view field) {
    const uint64_t at = pos_;
    PAGODA_RETURN_IF_ERROR(need(8, field));
    const uint64_t len = take_u64();
    if (len > left()) {
      return invalid_argument("{} at offset {}: length {} exceeds the {} bytes left in the file",
                              field, at, len, left());
    }
    std::string_view s(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(len));
    pos_ += len;
    return s;
  }

  Status parse_header() {
    PAGODA_RETURN_IF_ERROR(need(4, "magic"));
    if (load<uint32_t>(p_) != kMagic) {
      std::string_view magic(reinterpret_cast<const char*>(p_), 4);
      return invalid_argument("not a GGUF file: magic at offset 0 is \"{}\", expected \"GGUF\"",
                              gguf_escape(magic));
    }
    pos_ = 4;
    PAGODA_ASSIGN_OR_RETURN(const uint32_t version, read_u32("version"));
    if (version == 1) {
      return unimplemented(
          "GGUF version 1 (offset 4) is not supported: v1 used 32-bit counts and lengths; "
          "convert the model again with a current llama.cpp");
    }
    if (version != 0 && (version & 0xFFFFu) == 0) {
      return unimplemented(
          "version at offset 4 reads as {:#x}: this looks like a big-endian GGUF file, only "
          "little-endian files are supported",
          version);
    }
    if (version != 2 && version != 3) {
      return unimplemented("unsupported GGUF version {} at offset 4 (supported: 2, 3)", version);
    }
    f_.version_ = version;
    PAGODA_ASSIGN_OR_RETURN(n_tensors_, read_u64("tensor count"));
    PAGODA_ASSIGN_OR_RETURN(n_kv_, read_u64("metadata key count"));
    // Every record takes at least a few bytes, so a count larger than the rest of the file can
    // hold is corrupt; checking here bounds every later loop and allocation by the file size.
    if (n_kv_ > left() / kMinKvBytes) {
      return invalid_argument(
          "metadata key count {} at offset 16 cannot fit in the {} bytes left (each key/value "
          "needs at least {} bytes)",
          n_kv_, left(), kMinKvBytes);
    }
    if (n_tensors_ > left() / kMinTensorInfoBytes) {
      return invalid_argument(
          "tensor count {} at offset 8 cannot fit in the {} bytes left (each tensor info needs "
          "at least {} bytes)",
          n_tensors_, left(), kMinTensorInfoBytes);
    }
    if (n_kv_ * kMinKvBytes + n_tensors_ * kMinTensorInfoBytes > left()) {
      return invalid_argument(
          "{} metadata keys and {} tensor infos cannot fit in the {} bytes left after the header",
          n_kv_, n_tensors_, left());
    }
    return Status();
  }

  Status parse_kvs() {
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const uint64_t at = pos_;
      auto key = read_string("key");
      if (!key.ok()) return key.status().with_context(fmt::format("key #{} (at offset {})", i, at));
      if (key->empty()) return invalid_argument("key #{} (at offset {}): key is empty", i, at);
      const std::string where = fmt::format("key {} (at offset {})", quoted(*key), at);
      if (auto it = f_.key_to_index_.find(*key); it != f_.key_to_index_.end()) {
        return invalid_argument("{}: duplicate key (first at offset {})", where,
                                f_.kvs_[it->second].offset);
      }
      const uint64_t type_at = pos_;
      auto type_id = read_u32("value type");
      if (!type_id.ok()) return type_id.status().with_context(where);
      auto type = gguf_type_from_id(*type_id);
      if (!type) {
        return invalid_argument("{}: value type {} at offset {} is not a GGUF type", where,
                                *type_id, type_at);
      }
      GgufKv kv;
      kv.key = *key;
      kv.offset = at;
      PAGODA_RETURN_IF_ERROR(parse_value(*type, kv.value).with_context(where));
      f_.key_to_index_.emplace(kv.key, f_.kvs_.size());
      f_.kvs_.push_back(kv);
    }
    return Status();
  }

  Status parse_value(GgufType type, GgufValue& v) {
    if (type == GgufType::kArray) return parse_array(v, 1);
    if (type == GgufType::kString) {
      PAGODA_ASSIGN_OR_RETURN(v.str, read_string("string value"));
      v.type = GgufType::kString;
      return Status();
    }
    const uint64_t size = gguf_type_size(type);
    PAGODA_RETURN_IF_ERROR(need(size, fmt::format("{} value", gguf_type_name(type))));
    v = gguf_decode_scalar(type, p_ + pos_);
    pos_ += size;
    return Status();
  }

  // Array payload: u32 element type, u64 count, elements. `depth` is 1 for a top-level array.
  Status parse_array(GgufValue& v, int depth) {
    const uint64_t at = pos_;
    PAGODA_ASSIGN_OR_RETURN(const uint32_t elem_id, read_u32("array element type"));
    auto elem = gguf_type_from_id(elem_id);
    if (!elem) {
      return invalid_argument("array element type {} at offset {} is not a GGUF type", elem_id, at);
    }
    PAGODA_ASSIGN_OR_RETURN(const uint64_t count, read_u64("array length"));
    const uint64_t start = pos_;
    if (*elem == GgufType::kString) {
      auto min_bytes = checked_mul<uint64_t>(count, 8);
      if (!min_bytes || *min_bytes > left()) {
        return invalid_argument("array of {} strings at offset {} cannot fit in the {} bytes left",
                                count, at, left());
      }
      for (uint64_t k = 0; k < count; ++k) {
        const uint64_t elem_at = pos_;
        if (left() < 8) {
          return invalid_argument(
              "truncated: string element {} at offset {} needs 8 bytes, {} left", k, elem_at,
              left());
        }
        const uint64_t len = take_u64();
        if (len > left()) {
          return invalid_argument(
              "string element {} at offset {}: length {} exceeds the {} bytes left in the file", k,
              elem_at, len, left());
        }
        pos_ += len;
      }
    } else if (*elem == GgufType::kArray) {
      if (depth >= GgufFile::kMaxArrayDepth) {
        return invalid_argument("array at offset {} nests arrays deeper than {} levels", at,
                                GgufFile::kMaxArrayDepth);
      }
      auto min_bytes = checked_mul<uint64_t>(count, 12);
      if (!min_bytes || *min_bytes > left()) {
        return invalid_argument("array of {} arrays at offset {} cannot fit in the {} bytes left",
                                count, at, left());
      }
      for (uint64_t k = 0; k < count; ++k) {
        GgufValue inner;
        PAGODA_RETURN_IF_ERROR(
            parse_array(inner, depth + 1).with_context(fmt::format("array element {}", k)));
      }
    } else {
      auto bytes = checked_mul<uint64_t>(count, gguf_type_size(*elem));
      if (!bytes || *bytes > left()) {
        return invalid_argument(
            "array of {} {} at offset {} needs {} bytes, only {} are left in the file", count,
            gguf_type_name(*elem), at,
            bytes ? fmt::format("{}", *bytes) : std::string("more than 2^64"), left());
      }
      pos_ += *bytes;
    }
    v = GgufValue();
    v.type = GgufType::kArray;
    v.elem_type = *elem;
    v.count = count;
    v.raw = std::span<const uint8_t>(p_ + start, static_cast<size_t>(pos_ - start));
    return Status();
  }

  Status parse_alignment() {
    const GgufKv* kv = f_.find_kv("general.alignment");
    if (kv == nullptr) return Status();
    if (kv->value.type != GgufType::kUint32) {
      return invalid_argument("key 'general.alignment' (at offset {}): type is {}, must be uint32",
                              kv->offset, type_description(kv->value));
    }
    if (!is_power_of_two(kv->value.u)) {
      return invalid_argument(
          "key 'general.alignment' (at offset {}): alignment {} is not a power of two", kv->offset,
          kv->value.u);
    }
    f_.alignment_ = kv->value.u;
    return Status();
  }

  static std::string tensor_where(const GgufTensorInfo& t) {
    return fmt::format("tensor {} (tensor info at offset {})", quoted(t.name), t.info_offset);
  }

  Status parse_tensor_infos() {
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      GgufTensorInfo t;
      t.info_offset = pos_;
      auto name = read_string("tensor name");
      if (!name.ok()) {
        return name.status().with_context(
            fmt::format("tensor #{} (tensor info at offset {})", i, t.info_offset));
      }
      if (name->empty()) {
        return invalid_argument("tensor #{} (tensor info at offset {}): name is empty", i,
                                t.info_offset);
      }
      t.name = *name;
      const std::string where = tensor_where(t);
      if (auto it = f_.tensor_name_to_index_.find(t.name); it != f_.tensor_name_to_index_.end()) {
        return invalid_argument("{}: duplicate tensor name (first tensor info at offset {})", where,
                                f_.tensors_[it->second].info_offset);
      }
      PAGODA_RETURN_IF_ERROR(parse_tensor_shape(t).with_context(where));
      f_.tensor_name_to_index_.emplace(t.name, f_.tensors_.size());
      f_.tensors_.push_back(t);
    }
    return Status();
  }

  // n_dims, dims, type and offset of one tensor info; computes its element count and byte size.
  Status parse_tensor_shape(GgufTensorInfo& t) {
    const uint64_t n_dims_at = pos_;
    PAGODA_ASSIGN_OR_RETURN(t.n_dims, read_u32("n_dims"));
    if (t.n_dims == 0 || t.n_dims > kMaxDims) {
      return invalid_argument("n_dims at offset {} is {} (must be 1..{})", n_dims_at, t.n_dims,
                              kMaxDims);
    }
    PAGODA_RETURN_IF_ERROR(need(8ull * t.n_dims, "dims"));
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      const uint64_t dim_at = pos_;
      t.dims[d] = take_u64();
      if (t.dims[d] == 0) return invalid_argument("dim {} (at offset {}) is 0", d, dim_at);
    }
    const uint64_t type_at = pos_;
    PAGODA_ASSIGN_OR_RETURN(const uint32_t type_id, read_u32("type"));
    auto info = tensor::dtype_info(type_id);
    if (!info) return invalid_argument("unknown tensor type id {} at offset {}", type_id, type_at);
    t.dtype = info->dtype;
    PAGODA_ASSIGN_OR_RETURN(t.offset, read_u64("data offset"));

    const std::string shape = fmt::format("[{}]", fmt::join(t.dims, t.dims + t.n_dims, ", "));
    uint64_t n = 1;
    for (uint32_t d = 0; d < t.n_dims; ++d) {
      auto next = checked_mul<uint64_t>(n, t.dims[d]);
      if (!next) return invalid_argument("element count of shape {} overflows", shape);
      n = *next;
    }
    t.num_elements = n;
    if (t.dims[0] % info->block_size != 0) {
      return invalid_argument("dim 0 ({}) is not a multiple of the {} block size {}", t.dims[0],
                              info->name, info->block_size);
    }
    auto row = tensor::row_size_bytes(t.dtype, t.dims[0]);
    auto size = row.ok() ? checked_mul<uint64_t>(*row, n / t.dims[0]) : std::nullopt;
    if (!size) {
      return invalid_argument("byte size of {} {} elements overflows", shape, info->name);
    }
    t.size_bytes = *size;
    return Status();
  }

  // The data section starts at the first aligned offset after the tensor infos; each tensor's
  // data must be aligned, inside the file, and must not overlap another tensor's.
  Status place_tensor_data() {
    const uint64_t align = f_.alignment_;
    auto aligned = checked_align_up(pos_, align);
    if (n_tensors_ == 0) {
      // Writers pad even without tensors, but a file that ends right after the infos is fine.
      f_.data_offset_ = aligned && *aligned <= size_ ? *aligned : pos_;
      return Status();
    }
    if (!aligned || *aligned > size_) {
      return invalid_argument(
          "data section: tensor infos end at offset {}; padded to the alignment {} the data "
          "section would start beyond the end of the file ({} bytes)",
          pos_, align, size_);
    }
    f_.data_offset_ = *aligned;
    for (GgufTensorInfo& t : f_.tensors_) {
      if (t.offset % align != 0) {
        return invalid_argument("{}: data offset {} is not a multiple of the alignment {}",
                                tensor_where(t), t.offset, align);
      }
      auto start = checked_add<uint64_t>(f_.data_offset_, t.offset);
      auto end = start ? checked_add<uint64_t>(*start, t.size_bytes) : std::nullopt;
      if (!end || *end > size_) {
        return invalid_argument(
            "{}: data at offset {} + {} ({} bytes) extends beyond the end of the file ({} bytes)",
            tensor_where(t), f_.data_offset_, t.offset, t.size_bytes, size_);
      }
      t.data = p_ + *start;
    }
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(f_.tensors_.size());
    for (const GgufTensorInfo& t : f_.tensors_)
      by_offset.push_back(&t);
    std::sort(
        by_offset.begin(), by_offset.end(),
        [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t k = 1; k < by_offset.size(); ++k) {
      const GgufTensorInfo& a = *by_offset[k - 1];
      const GgufTensorInfo& b = *by_offset[k];
      if (a.offset + a.size_bytes > b.offset) {  // no overflow: both end inside the file
        return invalid_argument("{}: data [{}, {}) overlaps {} at data offset {}", tensor_where(b),
                                b.offset, b.offset + b.size_bytes, tensor_where(a), a.offset);
      }
    }
    return Status();
  }

  const uint8_t* p_;
  uint64_t size_;
  uint64_t pos_ = 0;
  GgufFile& f_;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
};

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, parse(mapped.bytes(), path));
  file->file_ = std::move(mapped);  // the mapping's address does not change on move
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(std::span<const uint8_t> bytes,
                                                  std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name_ = std::move(name);
  file->bytes_ = bytes;
  GgufParser parser(bytes, *file);
  Status st = parser.parse();
  if (!st.ok()) return st.with_context(file->name_);
  st = validate_gguf_metadata(*file);
  if (!st.ok()) return st.with_context(file->name_);
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(std::vector<uint8_t>&& bytes, std::string name) {
  std::vector<uint8_t> owned = std::move(bytes);
  const std::span<const uint8_t> view(owned);
  PAGODA_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, parse(view, std::move(name)));
  file->owned_ = std::move(owned);  // moving a vector keeps its buffer, so the views stay valid
  return file;
}

const GgufKv* GgufFile::find_kv(std::string_view key) const {
  auto it = key_to_index_.find(key);
  return it == key_to_index_.end() ? nullptr : &kvs_[it->second];
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const GgufKv* kv = find_kv(key);
  return kv == nullptr ? nullptr : &kv->value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_name_to_index_.find(name);
  return it == tensor_name_to_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status mistyped(const GgufKv& kv, std::string_view expected) {
  return invalid_argument("key {} (at offset {}) is {}, expected {}", quoted(kv.key), kv.offset,
                          type_description(kv.value), expected);
}

Result<const GgufKv*> lookup(const GgufFile& f, std::string_view key) {
  const GgufKv* kv = f.find_kv(key);
  if (kv == nullptr) return not_found("key {} not found", quoted(key));
  return kv;
}

// Integer value of a decoded integer scalar as int64, or an error naming `what`.
Result<int64_t> fit_int64(const GgufValue& v, const std::function<std::string()>& what) {
  if (gguf_type_is_signed(v.type)) return v.i;
  if (v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return invalid_argument("{} is {} ({}), which does not fit int64", what(), v.u,
                            gguf_type_name(v.type));
  }
  return static_cast<int64_t>(v.u);
}

}  // namespace

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  const GgufValue& v = kv->value;
  if (!gguf_type_is_integer(v.type)) return mistyped(*kv, "an unsigned integer");
  if (gguf_type_is_signed(v.type) && v.i < 0) {
    return invalid_argument("key {} (at offset {}) is {} ({}), expected an unsigned integer",
                            quoted(kv->key), kv->offset, v.i, gguf_type_name(v.type));
  }
  return v.u;
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  if (!gguf_type_is_integer(kv->value.type)) return mistyped(*kv, "an integer");
  return fit_int64(kv->value, [kv] {
    return fmt::format("key {} (at offset {})", quoted(kv->key), kv->offset);
  });
}

Result<double> GgufFile::get_float(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  const GgufType t = kv->value.type;
  if (t != GgufType::kFloat32 && t != GgufType::kFloat64 && !gguf_type_is_integer(t)) {
    return mistyped(*kv, "a number");
  }
  return kv->value.f;
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  if (kv->value.type != GgufType::kBool) return mistyped(*kv, "bool");
  return kv->value.u != 0;
}

Result<std::string_view> GgufFile::get_string(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  if (kv->value.type != GgufType::kString) return mistyped(*kv, "string");
  return kv->value.str;
}

Result<std::vector<std::string_view>> GgufFile::get_string_array(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  const GgufValue& v = kv->value;
  if (v.type != GgufType::kArray || v.elem_type != GgufType::kString) {
    return mistyped(*kv, "array of string");
  }
  std::vector<std::string_view> out;
  out.reserve(v.count);  // validated: count <= raw bytes / 8
  gguf_for_each_element(v, [&out](uint64_t, const GgufValue& e) {
    out.push_back(e.str);
    return true;
  });
  return out;
}

Result<std::vector<float>> GgufFile::get_float_array(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  const GgufValue& v = kv->value;
  if (v.type != GgufType::kArray ||
      (v.elem_type != GgufType::kFloat32 && v.elem_type != GgufType::kFloat64)) {
    return mistyped(*kv, "array of float32 or float64");
  }
  std::vector<float> out(v.count);  // validated: count * element size == raw bytes
  if (v.elem_type == GgufType::kFloat32) {
    std::memcpy(out.data(), v.raw.data(), v.count * sizeof(float));
  } else {
    for (uint64_t k = 0; k < v.count; ++k) {
      out[k] = narrow_to_float(load<double>(v.raw.data() + k * sizeof(double)));
    }
  }
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  PAGODA_ASSIGN_OR_RETURN(const GgufKv* kv, lookup(*this, key));
  const GgufValue& v = kv->value;
  if (v.type != GgufType::kArray || !gguf_type_is_integer(v.elem_type)) {
    return mistyped(*kv, "array of integers");
  }
  std::vector<int64_t> out;
  out.reserve(v.count);
  const uint64_t size = gguf_type_size(v.elem_type);
  for (uint64_t k = 0; k < v.count; ++k) {
    GgufValue e = gguf_decode_scalar(v.elem_type, v.raw.data() + k * size);
    auto x = fit_int64(e, [kv, k] {
      return fmt::format("key {} (at offset {}) element {}", quoted(kv->key), kv->offset, k);
    });
    if (!x.ok()) return std::move(x).take_status();
    out.push_back(*x);
  }
  return out;
}

}  // namespace pagoda::format
