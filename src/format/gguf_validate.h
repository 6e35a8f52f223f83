// Checks of well-known GGUF metadata on a structurally valid file, as far as the file format
// goes: tokenizer arrays (types, equal lengths), special token ids (integers), and the
// hyper-parameter keys of general.architecture (`A.block_count`, `A.embedding_length`, heads,
// feed-forward, context, experts) being integers, or per-layer arrays of integers with one entry
// per layer. Their values (positive, bounded, consistent) have one owner, the model's config
// (model::ConfigLimits, model::validate_config), which the loader applies. Keys that are absent
// are not required here. GgufFile::open/parse run these checks.
#pragma once

#include "base/status.h"

namespace pagoda::format {

class GgufFile;

// Errors name the key and its file offset, e.g. "key 'llama.attention.head_count_kv' (at offset
// 312): per-layer array has 3 entries but llama.block_count is 2".
Status validate_gguf_metadata(const GgufFile& file);

}  // namespace pagoda::format
