// GGUF writer: encodes metadata values eagerly (GgufWriteValue), lays tensors out at write time
// (each at an aligned offset, padded with zeros) and streams everything through one ByteSink.
#include "format/gguf_writer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <memory>

#include "base/check.h"
#include "base/checked_math.h"

namespace pagoda::format {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};

void put_u32(std::vector<uint8_t>& out, uint32_t v) {
  const size_t at = out.size();
  out.resize(at + 4);
  std::memcpy(out.data() + at, &v, 4);
}

void put_u64(std::vector<uint8_t>& out, uint64_t v) {
  const size_t at = out.size();
  out.resize(at + 8);
  std::memcpy(out.data() + at, &v, 8);
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put_u64(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

// Payload of an array of strings: element type, count, then each string.
template <typename Strings>
std::vector<uint8_t> string_array_payload(const Strings& values) {
  std::vector<uint8_t> payload;
  put_u32(payload, static_cast<uint32_t>(GgufType::kString));
  put_u64(payload, values.size());
  for (const auto& s : values)
    put_string(payload, s);
  return payload;
}

}  // namespace

GgufWriteValue GgufWriteValue::string(std::string_view v) {
  std::vector<uint8_t> payload;
  put_string(payload, v);
  return raw(static_cast<uint32_t>(GgufType::kString), std::move(payload));
}

GgufWriteValue GgufWriteValue::bool_array(const std::vector<bool>& values) {
  std::vector<uint8_t> payload;
  put_u32(payload, static_cast<uint32_t>(GgufType::kBool));
  put_u64(payload, values.size());
  for (bool b : values)
    payload.push_back(b ? 1 : 0);
  return raw(static_cast<uint32_t>(GgufType::kArray), std::move(payload));
}

GgufWriteValue GgufWriteValue::string_array(std::span<const std::string> values) {
  return raw(static_cast<uint32_t>(GgufType::kArray), string_array_payload(values));
}

GgufWriteValue GgufWriteValue::string_array(std::span<const std::string_view> values) {
  return raw(static_cast<uint32_t>(GgufType::kArray), string_array_payload(values));
}

GgufWriteValue GgufWriteValue::array_of_arrays(std::span<const GgufWriteValue> arrays) {
  std::vector<uint8_t> payload;
  put_u32(payload, static_cast<uint32_t>(GgufType::kArray));
  put_u64(payload, arrays.size());
  for (const GgufWriteValue& a : arrays) {
    PAGODA_CHECK_MSG(a.type_id_ == static_cast<uint32_t>(GgufType::kArray),
                     "array_of_arrays: every element must be an array");
    payload.insert(payload.end(), a.payload_.begin(), a.payload_.end());
  }
  return raw(static_cast<uint32_t>(GgufType::kArray), std::move(payload));
}

GgufWriteValue GgufWriteValue::copy_of(const GgufValue& value) {
  std::vector<uint8_t> payload;
  if (value.type == GgufType::kString) {
    put_string(payload, value.str);
  } else if (value.type == GgufType::kArray) {
    put_u32(payload, static_cast<uint32_t>(value.elem_type));
    put_u64(payload, value.count);
    payload.insert(payload.end(), value.raw.begin(), value.raw.end());
  } else {
    payload.assign(value.raw.begin(), value.raw.end());
  }
  return raw(static_cast<uint32_t>(value.type), std::move(payload));
}

GgufWriteValue GgufWriteValue::raw(uint32_t type_id, std::vector<uint8_t> payload) {
  GgufWriteValue out;
  out.type_id_ = type_id;
  out.payload_ = std::move(payload);
  return out;
}

void GgufWriter::record_error(Status status) {
  if (error_.ok()) error_ = std::move(status);
}

GgufWriter& GgufWriter::set_version(uint32_t version) {
  if (version != 2 && version != 3) {
    record_error(invalid_argument("GGUF writer: version {} is not supported (2 or 3)", version));
  } else {
    version_ = version;
  }
  return *this;
}

GgufWriter& GgufWriter::set_alignment(uint32_t alignment) {
  return set("general.alignment", GgufWriteValue::u32(alignment));
}

GgufWriter& GgufWriter::set(std::string key, GgufWriteValue value) {
  if (key.empty()) {
    record_error(invalid_argument("GGUF writer: metadata key is empty"));
    return *this;
  }
  if (key == "general.alignment") {
    uint32_t a = 0;
    if (value.type_id() != static_cast<uint32_t>(GgufType::kUint32)) {
      record_error(invalid_argument("GGUF writer: general.alignment must be uint32"));
      return *this;
    }
    std::memcpy(&a, value.payload().data(), 4);
    if (!is_power_of_two(a)) {
      record_error(invalid_argument("GGUF writer: alignment {} is not a power of two", a));
      return *this;
    }
    alignment_ = a;
  }
  for (Kv& kv : kvs_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return *this;
    }
  }
  kvs_.push_back(Kv{std::move(key), std::move(value)});
  return *this;
}

GgufWriter& GgufWriter::add_tensor(std::string name, tensor::DType dtype,
                                   std::vector<uint64_t> dims, std::vector<uint8_t> data) {
  const uint64_t size = data.size();
  auto shared = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  TensorSource source = [shared](const ByteSink& sink) { return sink(*shared); };
  return add_tensor_impl(std::move(name), dtype, std::move(dims), std::move(source), &size);
}

GgufWriter& GgufWriter::add_tensor(std::string name, tensor::DType dtype,
                                   std::vector<uint64_t> dims, TensorSource source) {
  return add_tensor_impl(std::move(name), dtype, std::move(dims), std::move(source), nullptr);
}

GgufWriter& GgufWriter::add_tensor_impl(std::string name, tensor::DType dtype,
                                        std::vector<uint64_t> dims, TensorSource source,
                                        const uint64_t* data_size) {
  const std::string where = fmt::format("GGUF writer: tensor '{}'", gguf_escape(name, 120));
  if (name.empty()) {
    record_error(invalid_argument("GGUF writer: tensor name is empty"));
    return *this;
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) {
      record_error(invalid_argument("{}: duplicate tensor name", where));
      return *this;
    }
  }
  if (dims.empty() || dims.size() > 4) {
    record_error(invalid_argument("{}: {} dims (must be 1..4)", where, dims.size()));
    return *this;
  }
  uint64_t n = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    auto next = checked_mul<uint64_t>(n, dims[d]);
    if (dims[d] == 0 || !next) {
      record_error(
          invalid_argument("{}: dim {} is {} (or the element count overflows)", where, d, dims[d]));
      return *this;
    }
    n = *next;
  }
  auto row = tensor::row_size_bytes(dtype, dims[0]);
  if (!row.ok()) {
    record_error(row.status().with_context(where));
    return *this;
  }
  auto size = checked_mul<uint64_t>(*row, n / dims[0]);
  if (!size) {
    record_error(invalid_argument("{}: byte size overflows", where));
    return *this;
  }
  if (data_size != nullptr && *data_size != *size) {
    record_error(invalid_argument("{}: data has {} bytes, the {} shape needs {}", where, *data_size,
                                  tensor::dtype_name(dtype), *size));
    return *this;
  }
  tensors_.push_back(Tensor{std::move(name), dtype, std::move(dims), *size, std::move(source)});
  return *this;
}

Result<std::vector<uint64_t>> GgufWriter::tensor_offsets() const {
  std::vector<uint64_t> offsets;
  offsets.reserve(tensors_.size());
  uint64_t next = 0;
  for (const Tensor& t : tensors_) {
    offsets.push_back(next);
    auto padded = checked_align_up(t.size_bytes, alignment_);
    auto end = padded ? checked_add<uint64_t>(next, *padded) : std::nullopt;
    if (!end) return invalid_argument("GGUF writer: the data section size overflows");
    next = *end;
  }
  return offsets;
}

Result<std::vector<uint8_t>> GgufWriter::metadata_bytes() const {
  PAGODA_ASSIGN_OR_RETURN(std::vector<uint64_t> offsets, tensor_offsets());
  std::vector<uint8_t> out(kMagic, kMagic + 4);
  put_u32(out, version_);
  put_u64(out, tensors_.size());
  put_u64(out, kvs_.size());
  for (const Kv& kv : kvs_) {
    put_string(out, kv.key);
    put_u32(out, kv.value.type_id());
    out.insert(out.end(), kv.value.payload().begin(), kv.value.payload().end());
  }
  for (size_t k = 0; k < tensors_.size(); ++k) {
    const Tensor& t = tensors_[k];
    put_string(out, t.name);
    put_u32(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims)
      put_u64(out, d);
    put_u32(out, static_cast<uint32_t>(t.dtype));
    put_u64(out, offsets[k]);
  }
  out.resize(*checked_align_up(out.size(), alignment_), 0);
  return out;
}

Result<uint64_t> GgufWriter::data_offset() const {
  PAGODA_RETURN_IF_ERROR(error_);
  PAGODA_ASSIGN_OR_RETURN(std::vector<uint8_t> meta, metadata_bytes());
  return meta.size();
}

Status GgufWriter::write(const ByteSink& sink) const {
  PAGODA_RETURN_IF_ERROR(error_);
  PAGODA_ASSIGN_OR_RETURN(std::vector<uint8_t> meta, metadata_bytes());
  PAGODA_RETURN_IF_ERROR(sink(meta));
  static constexpr uint8_t kZeros[256] = {};
  for (const Tensor& t : tensors_) {
    uint64_t written = 0;
    ByteSink counted = [&](std::span<const uint8_t> chunk) -> Status {
      if (chunk.size() > t.size_bytes - written) {
        return invalid_argument("GGUF writer: tensor '{}': source produced more than {} bytes",
                                gguf_escape(t.name, 120), t.size_bytes);
      }
      written += chunk.size();
      return sink(chunk);
    };
    PAGODA_RETURN_IF_ERROR(t.source(counted));
    if (written != t.size_bytes) {
      return invalid_argument("GGUF writer: tensor '{}': source produced {} of {} bytes",
                              gguf_escape(t.name, 120), written, t.size_bytes);
    }
    uint64_t pad = *checked_align_up(t.size_bytes, alignment_) - t.size_bytes;
    while (pad > 0) {
      const uint64_t n = pad < sizeof(kZeros) ? pad : sizeof(kZeros);
      PAGODA_RETURN_IF_ERROR(sink(std::span<const uint8_t>(kZeros, n)));
      pad -= n;
    }
  }
  return Status();
}

Result<std::vector<uint8_t>> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out;
  PAGODA_RETURN_IF_ERROR(write([&out](std::span<const uint8_t> chunk) {
    out.insert(out.end(), chunk.begin(), chunk.end());
    return Status();
  }));
  return out;
}

Status GgufWriter::write_file(const std::string& path) const {
  PAGODA_RETURN_IF_ERROR(error_);
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return io_error("{}: cannot create: {}", tmp, std::strerror(errno));
  std::vector<char> buffer(1 << 20);
  std::setvbuf(f, buffer.data(), _IOFBF, buffer.size());
  Status st = write([f, &tmp](std::span<const uint8_t> chunk) -> Status {
    if (!chunk.empty() && std::fwrite(chunk.data(), 1, chunk.size(), f) != chunk.size()) {
      return io_error("{}: write failed: {}", tmp, std::strerror(errno));
    }
    return Status();
  });
  if (st.ok() && std::fflush(f) != 0)
    st = io_error("{}: write failed: {}", tmp, std::strerror(errno));
  if (std::fclose(f) != 0 && st.ok())
    st = io_error("{}: close failed: {}", tmp, std::strerror(errno));
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = io_error("{}: cannot rename to {}: {}", tmp, path, std::strerror(errno));
  }
  if (!st.ok()) std::remove(tmp.c_str());
  return st;
}

}  // namespace pagoda::format
