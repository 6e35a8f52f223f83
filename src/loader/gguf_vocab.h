// GGUF → tokenizer::Vocab: reads the `tokenizer.ggml.*` metadata the way llama.cpp's
// llama_vocab::load does, including its defaults when keys are absent (per tokenizer model and
// pre-tokenizer: special ids, add_bos/add_eos, add_space_prefix, clean_spaces, ignore_merges).
#pragma once

#include "base/status.h"
#include "format/gguf_file.h"
#include "tokenizer/vocab.h"

namespace pagoda::loader {

// Supported tokenizer.ggml.model values: "llama" (SPM) and "gpt2" (byte-level BPE); others are
// unimplemented. Missing or mistyped required keys (model, tokens; merges for gpt2), arrays
// whose length differs from tokens, and bool/string keys of the wrong type are invalid_argument
// naming the key. Special ids outside the vocabulary are ignored with a warning (llama.cpp does
// the same; some published files have them). The returned Vocab still goes through
// Tokenizer::create's validation. Strings are copied: the file may be closed afterwards.
Result<tokenizer::Vocab> load_vocab(const format::GgufFile& file);

}  // namespace pagoda::loader
