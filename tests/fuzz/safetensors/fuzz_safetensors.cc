// libFuzzer target: SafetensorsFile::parse on arbitrary bytes, then reads every accepted
// tensor's bytes, shape and dtype, so ASan/UBSan see any read the validation let through and the
// documented invariants (tensors tile the data area, sizes = shape x dtype) are checked. The
// same bytes are also fed to the JSON parsers of a Hugging Face directory (config.json,
// generation_config.json (a multimodal config's nested text_config too), tokenizer_config.json,
// model.safetensors.index.json), which must return a Status and never crash.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "format/hf_config.h"
#include "format/safetensors.h"

namespace {

volatile uint64_t g_sink = 0;

void check_file(const pagoda::format::SafetensorsFile& f, size_t size) {
  using namespace pagoda::format;
  uint64_t expected_begin = 0;
  for (const StTensor& t : f.tensors()) {
    if (t.begin != expected_begin || t.end < t.begin) __builtin_trap();  // tiles the data area
    expected_begin = t.end;
    uint64_t elements = 1;
    for (uint64_t d : t.shape)
      elements *= d;  // validated: no overflow
    if (elements != t.num_elements) __builtin_trap();
    if (elements * st_dtype_size(t.dtype) != t.size_bytes()) __builtin_trap();
    if (f.find(t.name) != &t) __builtin_trap();  // names are unique
    const auto bytes = t.bytes();
    if (!bytes.empty()) g_sink = g_sink + bytes.front() + bytes.back();
    (void)SafetensorsFile::compute_dtype(t);
  }
  if (f.data_offset() + expected_begin != size) __builtin_trap();
  for (const auto& [key, value] : f.metadata())
    g_sink = g_sink + key.size() + value.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = pagoda::format::SafetensorsFile::parse(std::span<const uint8_t>(data, size));
  if (file.ok()) check_file(**file, size);

  const std::string_view text(reinterpret_cast<const char*>(data), size);
  g_sink = g_sink + pagoda::format::parse_hf_config(text).ok();
  g_sink = g_sink + pagoda::format::parse_hf_generation_config(text).ok();
  g_sink = g_sink + pagoda::format::parse_hf_tokenizer_config(text).ok();
  g_sink = g_sink + pagoda::format::parse_hf_weight_index(text).ok();
  return 0;
}
