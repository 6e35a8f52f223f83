// libFuzzer target: GgufFile::parse on arbitrary bytes, then touches every metadata value (typed
// getters, element walks, formatting) and every tensor's data range, so ASan/UBSan see any read
// the validation let through. Every accepted file is also rewritten with GgufWriter and parsed
// again: the writer must accept whatever the reader accepted, and the copy must read the same.
#include <cstddef>
#include <cstdint>
#include <span>

#include <algorithm>
#include <string>
#include <vector>

#include "format/gguf_file.h"
#include "format/gguf_writer.h"

namespace {

volatile uint64_t g_sink = 0;

void touch_value(const pagoda::format::GgufValue& v, int depth) {
  using pagoda::format::GgufType;
  g_sink = g_sink + v.u + static_cast<uint64_t>(v.i) + v.str.size();
  if (!v.str.empty()) g_sink = g_sink + static_cast<uint8_t>(v.str.back());
  if (v.type != GgufType::kArray) return;
  if (!v.raw.empty()) g_sink = g_sink + v.raw.front() + v.raw.back();
  const uint64_t visited = pagoda::format::gguf_for_each_element(
      v, [depth](uint64_t, const pagoda::format::GgufValue& e) {
        touch_value(e, depth + 1);
        return true;
      });
  if (visited != v.count) __builtin_trap();  // validated arrays must walk completely
}

bool same_bytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// parse -> write -> parse: same version, keys, values and tensors (offsets may differ).
void check_rewrite(const pagoda::format::GgufFile& f) {
  using namespace pagoda::format;
  GgufWriter w;
  w.set_version(f.version());
  for (const GgufKv& kv : f.metadata())
    w.set(std::string(kv.key), GgufWriteValue::copy_of(kv.value));
  for (const GgufTensorInfo& t : f.tensors()) {
    w.add_tensor(std::string(t.name), t.dtype, std::vector<uint64_t>(t.dims, t.dims + t.n_dims),
                 std::vector<uint8_t>(t.data, t.data + t.size_bytes));
  }
  auto bytes = w.to_bytes();
  if (!bytes.ok()) __builtin_trap();
  auto again = GgufFile::parse(*bytes, "rewrite");
  if (!again.ok()) __builtin_trap();
  const GgufFile& g = **again;
  if (g.version() != f.version() || g.alignment() != f.alignment()) __builtin_trap();
  if (g.metadata().size() != f.metadata().size() || g.tensors().size() != f.tensors().size()) {
    __builtin_trap();
  }
  for (size_t k = 0; k < f.metadata().size(); ++k) {
    const GgufKv& a = f.metadata()[k];
    const GgufKv& b = g.metadata()[k];
    if (a.key != b.key || a.value.type != b.value.type || a.value.str != b.value.str ||
        a.value.elem_type != b.value.elem_type || a.value.count != b.value.count ||
        !same_bytes(a.value.raw, b.value.raw)) {
      __builtin_trap();
    }
  }
  for (size_t k = 0; k < f.tensors().size(); ++k) {
    const GgufTensorInfo& a = f.tensors()[k];
    const GgufTensorInfo& b = g.tensors()[k];
    if (a.name != b.name || a.dtype != b.dtype || a.n_dims != b.n_dims ||
        !std::equal(a.dims, a.dims + 4, b.dims) || !same_bytes(a.bytes(), b.bytes())) {
      __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = pagoda::format::GgufFile::parse(std::span<const uint8_t>(data, size), "fuzz");
  if (!parsed.ok()) {
    g_sink = g_sink + parsed.status().message().size();
    return 0;
  }
  const pagoda::format::GgufFile& f = **parsed;
  for (const pagoda::format::GgufKv& kv : f.metadata()) {
    touch_value(kv.value, 0);
    g_sink = g_sink + pagoda::format::gguf_value_to_string(kv.value, 4, 32).size();
    if (f.find(kv.key) == nullptr) __builtin_trap();
    // Every getter on every key: each either succeeds or returns an error, never crashes.
    g_sink = g_sink + f.get_uint(kv.key).ok() + f.get_int(kv.key).ok() + f.get_float(kv.key).ok() +
             f.get_bool(kv.key).ok() + f.get_string(kv.key).ok();
    if (auto a = f.get_string_array(kv.key); a.ok()) g_sink = g_sink + a->size();
    if (auto a = f.get_float_array(kv.key); a.ok()) g_sink = g_sink + a->size();
    if (auto a = f.get_int_array(kv.key); a.ok()) g_sink = g_sink + a->size();
  }
  for (const pagoda::format::GgufTensorInfo& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) __builtin_trap();
    if (t.size_bytes == 0 || t.data < data || t.data + t.size_bytes > data + size) __builtin_trap();
    g_sink = g_sink + t.data[0] + t.data[t.size_bytes - 1] + t.num_elements;
  }
  check_rewrite(f);
  return 0;
}
