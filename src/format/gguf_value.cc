// GGUF value helpers: type table, scalar decoding, array walking and display formatting.
#include "format/gguf_value.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "base/checked_math.h"

namespace pagoda::format {
namespace {

static_assert(std::endian::native == std::endian::little, "GGUF is read as little-endian");

// Deeper nesting than this is treated as malformed by the walker (the parser uses the same limit).
constexpr int kMaxWalkDepth = 16;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Byte size of `count` elements of `elem` starting at `p` with `left` bytes available, or nullopt
// if they do not fit (or are malformed).
std::optional<uint64_t> elements_size(GgufType elem, uint64_t count, const uint8_t* p,
                                      uint64_t left, int depth) {
  if (elem == GgufType::kString) {
    uint64_t used = 0;
    for (uint64_t k = 0; k < count; ++k) {
      if (left - used < 8) return std::nullopt;
      uint64_t len = load<uint64_t>(p + used);
      used += 8;
      if (len > left - used) return std::nullopt;
      used += len;
    }
    return used;
  }
  if (elem == GgufType::kArray) {
    if (depth >= kMaxWalkDepth) return std::nullopt;
    uint64_t used = 0;
    for (uint64_t k = 0; k < count; ++k) {
      if (left - used < 12) return std::nullopt;
      auto inner = gguf_type_from_id(load<uint32_t>(p + used));
      uint64_t inner_count = load<uint64_t>(p + used + 4);
      used += 12;
      if (!inner) return std::nullopt;
      auto size = elements_size(*inner, inner_count, p + used, left - used, depth + 1);
      if (!size) return std::nullopt;
      used += *size;
    }
    return used;
  }
  auto bytes = checked_mul<uint64_t>(count, gguf_type_size(elem));
  if (!bytes || *bytes > left) return std::nullopt;
  return *bytes;
}

bool is_continuation(uint8_t b) {
  return (b & 0xC0) == 0x80;
}

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not valid.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto b0 = static_cast<uint8_t>(s[i]);
  size_t len;
  uint32_t cp;
  if (b0 < 0x80) return 1;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  for (size_t k = 1; k < len; ++k) {
    auto b = static_cast<uint8_t>(s[i + k]);
    if (!is_continuation(b)) return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::string format_float(double v) {
  return fmt::format("{:g}", v);
}

}  // namespace

std::string_view gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
      return "uint8";
    case GgufType::kInt8:
      return "int8";
    case GgufType::kUint16:
      return "uint16";
    case GgufType::kInt16:
      return "int16";
    case GgufType::kUint32:
      return "uint32";
    case GgufType::kInt32:
      return "int32";
    case GgufType::kFloat32:
      return "float32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kUint64:
      return "uint64";
    case GgufType::kInt64:
      return "int64";
    case GgufType::kFloat64:
      return "float64";
  }
  return "unknown";
}

std::optional<GgufType> gguf_type_from_id(uint32_t id) {
  if (id > static_cast<uint32_t>(GgufType::kFloat64)) return std::nullopt;
  return static_cast<GgufType>(id);
}

uint64_t gguf_type_size(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
      return 8;
    case GgufType::kString:
    case GgufType::kArray:
      return 0;
  }
  return 0;
}

bool gguf_type_is_integer(GgufType type) {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kUint16:
    case GgufType::kInt16:
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kUint64:
    case GgufType::kInt64:
      return true;
    default:
      return false;
  }
}

bool gguf_type_is_signed(GgufType type) {
  return type == GgufType::kInt8 || type == GgufType::kInt16 || type == GgufType::kInt32 ||
         type == GgufType::kInt64;
}

GgufValue gguf_decode_scalar(GgufType type, const uint8_t* p) {
  GgufValue v;
  v.type = type;
  v.raw = std::span<const uint8_t>(p, static_cast<size_t>(gguf_type_size(type)));
  auto set_unsigned = [&v](uint64_t x) {
    v.u = x;
    v.i = x <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(x) : 0;
    v.f = static_cast<double>(x);
  };
  auto set_signed = [&v](int64_t x) {
    v.i = x;
    v.u = x >= 0 ? static_cast<uint64_t>(x) : 0;
    v.f = static_cast<double>(x);
  };
  switch (type) {
    case GgufType::kUint8:
      set_unsigned(load<uint8_t>(p));
      break;
    case GgufType::kInt8:
      set_signed(load<int8_t>(p));
      break;
    case GgufType::kUint16:
      set_unsigned(load<uint16_t>(p));
      break;
    case GgufType::kInt16:
      set_signed(load<int16_t>(p));
      break;
    case GgufType::kUint32:
      set_unsigned(load<uint32_t>(p));
      break;
    case GgufType::kInt32:
      set_signed(load<int32_t>(p));
      break;
    case GgufType::kUint64:
      set_unsigned(load<uint64_t>(p));
      break;
    case GgufType::kInt64:
      set_signed(load<int64_t>(p));
      break;
    case GgufType::kBool:
      set_unsigned(load<uint8_t>(p) != 0 ? 1 : 0);
      break;
    case GgufType::kFloat32:
      v.f = load<float>(p);
      break;
    case GgufType::kFloat64:
      v.f = load<double>(p);
      break;
    case GgufType::kString:
    case GgufType::kArray:
      break;
  }
  return v;
}

uint64_t gguf_for_each_element(const GgufValue& array,
                               const std::function<bool(uint64_t, const GgufValue&)>& fn) {
  if (array.type != GgufType::kArray) return 0;
  const uint8_t* p = array.raw.data();
  const uint64_t size = array.raw.size();
  uint64_t pos = 0;
  const uint64_t scalar_size = gguf_type_size(array.elem_type);
  for (uint64_t k = 0; k < array.count; ++k) {
    GgufValue e;
    if (array.elem_type == GgufType::kString) {
      if (size - pos < 8) return k;
      uint64_t len = load<uint64_t>(p + pos);
      pos += 8;
      if (len > size - pos) return k;
      e.type = GgufType::kString;
      e.str = std::string_view(reinterpret_cast<const char*>(p + pos), len);
      pos += len;
    } else if (array.elem_type == GgufType::kArray) {
      if (size - pos < 12) return k;
      auto inner = gguf_type_from_id(load<uint32_t>(p + pos));
      uint64_t inner_count = load<uint64_t>(p + pos + 4);
      pos += 12;
      if (!inner) return k;
      auto inner_size = elements_size(*inner, inner_count, p + pos, size - pos, 1);
      if (!inner_size) return k;
      e.type = GgufType::kArray;
      e.elem_type = *inner;
      e.count = inner_count;
      e.raw = std::span<const uint8_t>(p + pos, *inner_size);
      pos += *inner_size;
    } else {
      if (scalar_size == 0 || size - pos < scalar_size) return k;
      e = gguf_decode_scalar(array.elem_type, p + pos);
      pos += scalar_size;
    }
    if (!fn(k, e)) return k + 1;
  }
  return array.count;
}

std::string gguf_escape(std::string_view s, size_t max_bytes) {
  std::string out;
  const size_t n = s.size() < max_bytes ? s.size() : max_bytes;
  out.reserve(n + 16);
  size_t i = 0;
  while (i < n) {
    auto c = static_cast<uint8_t>(s[i]);
    if (c >= 0x80) {
      size_t len = utf8_sequence_length(s, i);
      if (len > 0 && i + len <= n) {
        out.append(s.substr(i, len));
        i += len;
        continue;
      }
      if (len > 0) break;  // a valid character cut by the limit: stop before it
      out += fmt::format("\\x{:02x}", c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  if (i < s.size()) out += fmt::format("...({} bytes)", s.size());
  return out;
}

std::string gguf_value_to_string(const GgufValue& value, size_t max_elements, size_t max_string) {
  switch (value.type) {
    case GgufType::kBool:
      return value.u != 0 ? "true" : "false";
    case GgufType::kFloat32:
    case GgufType::kFloat64:
      return format_float(value.f);
    case GgufType::kString:
      return fmt::format("\"{}\"", gguf_escape(value.str, max_string));
    case GgufType::kArray: {
      std::string out = "[";
      uint64_t shown = 0;
      gguf_for_each_element(value, [&](uint64_t k, const GgufValue& e) {
        if (k >= max_elements) return false;
        if (k > 0) out += ", ";
        out += gguf_value_to_string(e, max_elements, max_string);
        ++shown;
        return true;
      });
      if (shown < value.count) out += shown > 0 ? ", ..." : "...";
      out += "]";
      return out;
    }
    default:
      if (gguf_type_is_signed(value.type)) return fmt::format("{}", value.i);
      return fmt::format("{}", value.u);
  }
}

}  // namespace pagoda::format
