// Vocab: the plain data a tokenizer is built from, whatever file it came from (GGUF metadata
// `tokenizer.ggml.*`, or a Hugging Face tokenizer.json). Validated by Tokenizer::create.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pagoda::tokenizer {

using TokenId = int32_t;

// GGUF token types (llama_token_type / tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

enum class VocabKind {
  kSpm,  // SentencePiece-style BPE over scores, ▁ for spaces, <0xXX> byte fallback ("llama")
  kBpe,  // byte-level BPE over merges with a pre-tokenizer regex ("gpt2")
  // BERT's WordPiece (tokenizer/wordpiece_encoder.h): tokens in Hugging Face form ("##ing" for a
  // word's continuation pieces); unk_id required; [CLS] / [SEP] are bos / eos.
  kWordPiece,
};

struct Vocab {
  VocabKind kind = VocabKind::kSpm;
  std::string pre = "default";  // tokenizer.ggml.pre: "llama3", "qwen2", "deepseek-coder", ...
  std::vector<std::string> tokens;
  std::vector<float> scores;           // empty or tokens.size()
  std::vector<TokenType> token_types;  // empty or tokens.size() (empty: all kNormal)
  std::vector<std::string> merges;     // BPE: "a b" pairs in priority order
  std::optional<TokenId> bos_id, eos_id, unk_id, pad_id, sep_id, eot_id, eom_id;
  // Fill-in-the-middle markers; pad/rep/sep also end generation (as in llama.cpp).
  std::optional<TokenId> fim_pre_id, fim_suf_id, fim_mid_id, fim_pad_id, fim_rep_id, fim_sep_id;
  std::vector<TokenId> extra_eog_ids;  // other end-of-generation ids (e.g. <|eot_id|>)
  bool add_bos = false;
  bool add_eos = false;
  bool add_space_prefix = true;  // SPM: prepend ▁ to the text
  bool clean_spaces = false;     // decoding: clean_up_tokenization_spaces
  bool ignore_merges = false;    // BPE: a pre-token that is itself a token skips merging (llama3)
  // Special tokens matched in text swallow the whitespace that follows them (llama.cpp's RSTRIP
  // attribute, which it sets on every special token of Phi-3 models except <unk>, <s> and
  // <|endoftext|>; GGUF has no per-token attributes, so the loader decides from general.name).
  bool rstrip_special = false;
  bool lower_case = true;  // WordPiece: BasicTokenizer's do_lower_case (and accent stripping)
};

}  // namespace pagoda::tokenizer
