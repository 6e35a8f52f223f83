// Semantic checks of well-known GGUF metadata on a structurally valid file: tokenizer arrays
// (types, equal lengths) and special token ids (< vocabulary size), and the hyper-parameters of
// general.architecture (`A.block_count`, `A.embedding_length`, heads, feed-forward, context,
// experts) being positive, bounded and consistent. Keys that are absent are not required here:
// the model loader asks for what it needs. GgufFile::open/parse run these checks.
#pragma once

#include "base/status.h"

namespace pagoda::format {

class GgufFile;

// Bounds applied to architecture hyper-parameters (anything larger is treated as corrupt).
struct GgufLimits {
  static constexpr uint64_t kMaxLayers = uint64_t{1} << 16;
  static constexpr uint64_t kMaxHeads = uint64_t{1} << 16;
  static constexpr uint64_t kMaxEmbedding = uint64_t{1} << 20;
  static constexpr uint64_t kMaxFeedForward = uint64_t{1} << 24;
  static constexpr uint64_t kMaxContext = uint64_t{1} << 30;
  static constexpr uint64_t kMaxHeadDim = uint64_t{1} << 14;
  static constexpr uint64_t kMaxExperts = uint64_t{1} << 16;
};

// Errors name the key and its file offset, e.g. "key 'llama.attention.head_count_kv' (at offset
// 312): head_count 32 is not a multiple of head_count_kv 5".
Status validate_gguf_metadata(const GgufFile& file);

}  // namespace pagoda::format
