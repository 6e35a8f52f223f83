#include "format/safetensors.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "base/checked_math.h"
#include "base/strict_json.h"

namespace pagoda::format {
namespace {

struct StDTypeInfo {
  StDType dtype;
  std::string_view name;
  uint32_t size;
};

constexpr std::array<StDTypeInfo, 15> kDTypes = {{
    {StDType::kBool, "BOOL", 1},
    {StDType::kU8, "U8", 1},
    {StDType::kI8, "I8", 1},
    {StDType::kF8_E5M2, "F8_E5M2", 1},
    {StDType::kF8_E4M3, "F8_E4M3", 1},
    {StDType::kI16, "I16", 2},
    {StDType::kU16, "U16", 2},
    {StDType::kF16, "F16", 2},
    {StDType::kBF16, "BF16", 2},
    {StDType::kI32, "I32", 4},
    {StDType::kU32, "U32", 4},
    {StDType::kF32, "F32", 4},
    {StDType::kF64, "F64", 8},
    {StDType::kI64, "I64", 8},
    {StDType::kU64, "U64", 8},
}};

// Offset of the first byte that is not part of a valid UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are invalid), or nullopt if all of `s` is valid.
std::optional<size_t> first_invalid_utf8(std::span<const uint8_t> s) {
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t min;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      len = 2, min = 0x80, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, min = 0x800, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, min = 0x10000, cp = c & 0x07;
    } else {
      return i;
    }
    if (s.size() - i < len) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::nullopt;
}

std::string shorten(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 120)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\x{:02x}", u);
    } else {
      out.push_back(c);
    }
  }
  if (s.size() > 120) out += "...";
  return out;
}

std::string shape_str(const std::vector<uint64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// A JSON array of non-negative integers (at most `max_len` of them, if non-zero).
Result<std::vector<uint64_t>> uint_array(const nlohmann::json& v, std::string_view tensor,
                                         std::string_view field) {
  if (!v.is_array()) {
    return invalid_argument("tensor \"{}\": {} is not an array", shorten(tensor), field);
  }
  std::vector<uint64_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const nlohmann::json& e = v[i];
    if (!e.is_number_unsigned()) {
      return invalid_argument("tensor \"{}\": {}[{}] is {}, not a non-negative integer",
                              shorten(tensor), field, i, shorten(e.dump()));
    }
    out.push_back(e.get<uint64_t>());
  }
  return out;
}

}  // namespace

std::string_view st_dtype_name(StDType dtype) {
  return kDTypes[static_cast<size_t>(dtype)].name;
}

uint32_t st_dtype_size(StDType dtype) {
  return kDTypes[static_cast<size_t>(dtype)].size;
}

std::optional<StDType> st_dtype_from_name(std::string_view name) {
  for (const StDTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  return std::nullopt;
}

std::optional<tensor::DType> st_compute_dtype(StDType dtype) {
  switch (dtype) {
    case StDType::kF32:
      return tensor::DType::kF32;
    case StDType::kF16:
      return tensor::DType::kF16;
    case StDType::kBF16:
      return tensor::DType::kBF16;
    default:
      return std::nullopt;
  }
}

Result<tensor::DType> SafetensorsFile::compute_dtype(const StTensor& tensor) {
  if (auto d = st_compute_dtype(tensor.dtype)) return *d;
  return unimplemented(
      "tensor \"{}\" has dtype {}, which pagoda cannot compute with (F32, F16, "
      "BF16 are supported)",
      shorten(tensor.name), st_dtype_name(tensor.dtype));
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto mapped = MappedFile::open(path);
  if (!mapped.ok()) return mapped.status();
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->file_ = std::move(mapped).value();
  f->bytes_ = f->file_.bytes();
  f->name_ = path;
  const Status st = f->parse_header();
  if (!st.ok()) return st.with_context(path);
  return f;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::parse(std::span<const uint8_t> bytes,
                                                                std::string name) {
  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->bytes_ = bytes;
  f->name_ = std::move(name);
  const Status st = f->parse_header();
  if (!st.ok()) return st.with_context(f->name_);
  return f;
}

const StTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = name_to_index_.find(name);
  return it == name_to_index_.end() ? nullptr : &tensors_[it->second];
}

Status SafetensorsFile::parse_header() {
  const uint64_t file_size = bytes_.size();
  if (file_size < 8) {
    return invalid_argument("file is {} bytes, too short for the 8-byte header length", file_size);
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | bytes_[static_cast<size_t>(i)];
  if (n > kMaxHeaderSize) {
    return invalid_argument("header length {} (bytes 0-7) exceeds the limit of {} bytes", n,
                            kMaxHeaderSize);
  }
  if (8 + n > file_size) {
    return invalid_argument("header length {} (bytes 0-7) runs past the end of the file ({} bytes)",
                            n, file_size);
  }
  header_size_ = n;
  const std::span<const uint8_t> header = bytes_.subspan(8, static_cast<size_t>(n));
  if (auto bad = first_invalid_utf8(header)) {
    return invalid_argument("header is not valid UTF-8 (file offset {})", 8 + *bad);
  }
  const std::string_view text(reinterpret_cast<const char*>(header.data()), header.size());
  auto parsed = parse_strict_json(text, "header", /*max_depth=*/16);
  if (!parsed.ok()) return parsed.status();
  const nlohmann::json& root = *parsed;
  if (!root.is_object()) return invalid_argument("header is not a JSON object");

  tensors_.reserve(root.size());
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;
      if (!value.is_object()) {
        return invalid_argument("__metadata__ is not an object of strings");
      }
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          return invalid_argument("__metadata__ \"{}\" is {}, not a string", shorten(mk),
                                  shorten(mv.dump()));
        }
        metadata_.emplace_back(mk, mv.get<std::string>());
      }
      continue;
    }
    StTensor t;
    t.name = key;
    if (!value.is_object()) {
      return invalid_argument("tensor \"{}\": entry is {}, not an object", shorten(key),
                              shorten(value.dump()));
    }
    const auto dtype_it = value.find("dtype");
    if (dtype_it == value.end()) return invalid_argument("tensor \"{}\": no dtype", shorten(key));
    if (!dtype_it->is_string()) {
      return invalid_argument("tensor \"{}\": dtype is {}, not a string", shorten(key),
                              shorten(dtype_it->dump()));
    }
    const auto dtype = st_dtype_from_name(dtype_it->get_ref<const std::string&>());
    if (!dtype) {
      return invalid_argument("tensor \"{}\": unknown dtype \"{}\"", shorten(key),
                              shorten(dtype_it->get_ref<const std::string&>()));
    }
    t.dtype = *dtype;
    const auto shape_it = value.find("shape");
    if (shape_it == value.end()) return invalid_argument("tensor \"{}\": no shape", shorten(key));
    PAGODA_ASSIGN_OR_RETURN(t.shape, uint_array(*shape_it, key, "shape"));
    const auto offsets_it = value.find("data_offsets");
    if (offsets_it == value.end()) {
      return invalid_argument("tensor \"{}\": no data_offsets", shorten(key));
    }
    PAGODA_ASSIGN_OR_RETURN(std::vector<uint64_t> offsets,
                            uint_array(*offsets_it, key, "data_offsets"));
    if (offsets.size() != 2) {
      return invalid_argument("tensor \"{}\": data_offsets has {} entries, not [begin, end]",
                              shorten(key), offsets.size());
    }
    t.begin = offsets[0];
    t.end = offsets[1];
    if (t.end < t.begin) {
      return invalid_argument("tensor \"{}\": data_offsets [{}, {}] end before they begin",
                              shorten(key), t.begin, t.end);
    }
    uint64_t count = 1;
    for (uint64_t d : t.shape) {
      auto next = checked_mul<uint64_t>(count, d);
      if (!next) {
        return invalid_argument("tensor \"{}\": shape {} overflows the element count", shorten(key),
                                shape_str(t.shape));
      }
      count = *next;
    }
    t.num_elements = count;
    const auto nbytes = checked_mul<uint64_t>(count, st_dtype_size(t.dtype));
    if (!nbytes) {
      return invalid_argument("tensor \"{}\": shape {} of {} overflows the byte size", shorten(key),
                              shape_str(t.shape), st_dtype_name(t.dtype));
    }
    if (*nbytes != t.end - t.begin) {
      return invalid_argument(
          "tensor \"{}\": shape {} of {} needs {} bytes but data_offsets [{}, {}] hold {}",
          shorten(key), shape_str(t.shape), st_dtype_name(t.dtype), *nbytes, t.begin, t.end,
          t.end - t.begin);
    }
    tensors_.push_back(std::move(t));
  }

  // Sorted by offsets, the tensors must tile the data area exactly.
  std::stable_sort(tensors_.begin(), tensors_.end(), [](const StTensor& a, const StTensor& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const uint64_t data_size = file_size - 8 - n;
  uint64_t expected = 0;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const StTensor& t = tensors_[i];
    if (t.begin > expected) {
      return invalid_argument(
          "tensor \"{}\": data_offsets begin at {} but the previous data ends at {} (a gap)",
          shorten(t.name), t.begin, expected);
    }
    if (t.begin < expected) {
      return invalid_argument(
          "tensor \"{}\": data_offsets [{}, {}] overlap tensor \"{}\" (which ends at {})",
          shorten(t.name), t.begin, t.end, shorten(tensors_[i - 1].name), expected);
    }
    expected = t.end;
  }
  if (expected != data_size) {
    return invalid_argument(
        "the tensors' data_offsets cover {} bytes but the data area after the header has {}",
        expected, data_size);
  }
  const uint8_t* data = bytes_.data() + 8 + n;
  name_to_index_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    tensors_[i].data = data + tensors_[i].begin;
    name_to_index_.emplace(tensors_[i].name, i);
  }
  return Status();
}

}  // namespace pagoda::format
