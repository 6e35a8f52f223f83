// Importance matrices in llama.cpp's legacy `.dat` format (what `llama-imatrix` wrote before its
// GGUF form, and what `llama-quantize --imatrix` still reads): per weight tensor, the mean over
// the calibration tokens of each input column's squared activation. Little-endian:
//
//   i32 n_entries
//   n_entries × { i32 name_len; char name[name_len]; i32 ncall; i32 nval; f32 values[nval] }
//   i32 last_call; i32 dataset_len; char dataset[dataset_len]     (optional trailer)
//
// values are stored as mean(x²) · ncall, as llama-imatrix stores them; readers divide by ncall
// (ImatrixEntry::values is already divided). The reader treats the file as hostile: every count
// is checked against the bytes left before anything is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace pagoda::format {

struct ImatrixEntry {
  std::string name;           // "blk.0.attn_q.weight"
  int32_t ncall = 0;          // chunks the statistics were gathered over (> 0)
  std::vector<float> values;  // [input columns] mean squared activation, finite and >= 0
};

struct Imatrix {
  std::vector<ImatrixEntry> entries;
  int32_t last_call = 0;
  std::string dataset;  // the calibration file's name, when the trailer is present

  const ImatrixEntry* find(std::string_view name) const;
};

Result<Imatrix> parse_imatrix(std::span<const uint8_t> bytes);
Result<Imatrix> read_imatrix(const std::string& path);
// Writes `m` (values multiplied back by ncall).
Status write_imatrix(const std::string& path, const Imatrix& m);

}  // namespace pagoda::format
