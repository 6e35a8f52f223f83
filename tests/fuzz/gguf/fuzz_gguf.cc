// libFuzzer target: GgufFile::parse on arbitrary bytes, then touches every metadata value (typed
// getters, element walks, formatting) and every tensor's data range, so ASan/UBSan see any read
// the validation let through.
#include <cstddef>
#include <cstdint>
#include <span>

#include "format/gguf_file.h"

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
  return 0;
}
