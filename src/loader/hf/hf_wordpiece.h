// BERT's WordPiece vocabulary from a Hugging Face directory: tokenizer.json whose model is
// "WordPiece" (model.vocab {token: id}, the BertNormalizer's lowercase, added_tokens' special
// flags), else vocab.txt (one token per line, the line number its id) with tokenizer_config.json's
// do_lower_case (default true). [CLS] / [SEP] / [UNK] / [PAD] (tokenizer_config.json's
// cls_token / sep_token / unk_token / pad_token when given) become the vocabulary's bos / eos /
// unk / pad ids, added to every text as [CLS] text [SEP].
#pragma once

#include <optional>
#include <string>

#include "base/status.h"
#include "tokenizer/vocab.h"

namespace pagoda::loader {

// nullopt when the directory's tokenizer is not WordPiece (a tokenizer.json with another model,
// or neither file). Errors name the file and field.
Result<std::optional<tokenizer::Vocab>> load_hf_wordpiece(const std::string& dir);

// The parsers, exposed for tests and the fuzz target: `tokenizer_config` may be empty.
Result<std::optional<tokenizer::Vocab>> wordpiece_from_tokenizer_json(
    std::string_view json_text, std::string_view tokenizer_config);
Result<tokenizer::Vocab> wordpiece_from_vocab_txt(std::string_view text,
                                                  std::string_view tokenizer_config);

}  // namespace pagoda::loader
