// Test helper: a copy of a fixture GGUF file with edits (metadata keys set after the original
// ones, tensors added, dropped or replaced before they are written), written into the build tree
// for a test to load. Header-only: tests link pagoda::format.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "format/gguf_file.h"
#include "format/gguf_writer.h"
#include "test_support.h"

namespace pagoda::testing {

// One tensor as it will be written.
struct GgufCopyTensor {
  std::string name;
  tensor::DType dtype;
  std::vector<uint64_t> dims;
  std::vector<uint8_t> bytes;
};

struct GgufEdits {
  std::function<void(format::GgufWriter&)> metadata;          // after the original keys
  std::function<void(std::vector<GgufCopyTensor>&)> tensors;  // before they are written
};

// An F32 tensor of `values` (1-D).
inline GgufCopyTensor f32_tensor(const std::string& name, const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  return GgufCopyTensor{name, tensor::DType::kF32, {values.size()}, std::move(bytes)};
}

// `src` with `edits` applied, written to binary_dir() / out_name. Returns its path.
inline Result<std::string> write_gguf_copy(const std::filesystem::path& src, const GgufEdits& edits,
                                           const std::string& out_name) {
  PAGODA_ASSIGN_OR_RETURN(auto file, format::GgufFile::open(src.string()));
  format::GgufWriter w;
  for (const format::GgufKv& kv : file->metadata())
    w.set(std::string(kv.key), format::GgufWriteValue::copy_of(kv.value));
  if (edits.metadata) edits.metadata(w);
  std::vector<GgufCopyTensor> tensors;
  for (const format::GgufTensorInfo& t : file->tensors()) {
    tensors.push_back(GgufCopyTensor{std::string(t.name), t.dtype,
                                     std::vector<uint64_t>(t.dims, t.dims + t.n_dims),
                                     std::vector<uint8_t>(t.bytes().begin(), t.bytes().end())});
  }
  if (edits.tensors) edits.tensors(tensors);
  for (GgufCopyTensor& t : tensors)
    w.add_tensor(t.name, t.dtype, t.dims, std::move(t.bytes));
  const std::string out = (binary_dir() / out_name).string();
  PAGODA_RETURN_IF_ERROR(w.write_file(out));
  return out;
}

}  // namespace pagoda::testing
