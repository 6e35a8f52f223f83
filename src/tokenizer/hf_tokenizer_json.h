// Hugging Face tokenizer.json → Vocab, for the BPE pipelines of the Llama, Mistral, Mixtral and
// Qwen2 families, mapped onto the llama.cpp-compatible tokenizer (Tokenizer::create) where the
// semantics agree:
//
// Byte-level BPE (GPT-2, Llama-3, Qwen2): model BPE + pre_tokenizer ByteLevel(use_regex) or
//   Sequence[Split(Regex, Isolated)..., ByteLevel(use_regex=false)] + decoder ByteLevel
//   → VocabKind::kBpe with the "a b" merges, `pre` chosen by the exact regex text (GPT-2 →
//   "gpt-2", Llama-3 → "llama3", Qwen2 → "qwen2"; llama.cpp runs the same patterns), and
//   model.ignore_merges → Vocab::ignore_merges.
// SentencePiece-style BPE (Llama-2, Mistral, Mixtral): model BPE with byte_fallback + normalizer
//   [Prepend("▁"), Replace(" ", "▁")] or pre_tokenizer Metaspace + decoders [Replace("▁", " "),
//   ByteFallback, Fuse, Strip(" ", 1, 0)] or Metaspace → VocabKind::kSpm. SentencePiece merges
//   the adjacent pair whose concatenation is the highest-scoring token; HF BPE merges the pair
//   with the lowest merge rank. Merges converted from SentencePiece list every split of every
//   token ordered by the token's score, so each token's score is taken as -(rank of the first
//   merge producing it) and the two agree; tokens no merge produces get a score below every
//   merge. <0xXX> tokens become byte tokens, model.unk_token the unknown token.
// added_tokens: special → control (matched only with parse_special), others → user-defined
//   (always matched); ids beyond the model vocab extend it, holes become "[PAD<id>]" (unused).
//
// What differs from HF (documented, not emulated): the NFC normalizer (Qwen2) is not applied
// (inputs are assumed NFC); per-token lstrip/single_word and `normalized` added-token matching are
// not applied (special tokens with rstrip turn on Vocab::rstrip_special, llama.cpp's rule for
// Phi-3); with Prepend/Metaspace("first") the ▁ is added at the text start and after every
// special token, as llama.cpp does; a pair present as a token but absent from the merges is still
// merged by the SentencePiece rule (never the case for converted SentencePiece vocabularies).
// Anything else (other models, normalizers, pre-tokenizers, regexes, decoders) is unimplemented
// with a message naming it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace pagoda::tokenizer {

// What comes from outside tokenizer.json (tokenizer_config.json, generation_config.json).
struct HfTokenizerOptions {
  std::optional<std::string> bos_token, eos_token, unk_token, pad_token;  // token texts
  std::optional<bool> add_bos, add_eos;  // add_bos_token / add_eos_token
  std::optional<bool> clean_up_spaces;   // clean_up_tokenization_spaces
  std::vector<int64_t> extra_eos_ids;    // more end-of-generation ids (generation_config)
};

// How the pipeline was mapped, for messages (pagoda inspect).
struct HfTokenizerSummary {
  std::string style;  // "byte-level BPE" or "SentencePiece-style BPE"
  std::string pre;    // the llama.cpp pre-tokenizer name
  size_t num_model_tokens = 0;
  size_t num_added_tokens = 0;
  size_t num_merges = 0;
  std::vector<std::string> notes;  // approximations made (e.g. "NFC normalizer not applied")
};

// Errors: invalid_argument naming the field (bad JSON, wrong types, a merge naming a token not
// in the vocab, conflicting ids), unimplemented naming the unsupported component.
Result<Vocab> vocab_from_hf_tokenizer_json(std::string_view json_text,
                                           const HfTokenizerOptions& options,
                                           HfTokenizerSummary* summary = nullptr);

}  // namespace pagoda::tokenizer
