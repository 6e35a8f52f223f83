// The tokenizer of a Hugging Face model directory: tokenizer.json (tokenizer/hf_tokenizer_json.h)
// with tokenizer_config.json's special tokens and BOS/EOS flags, the end-of-generation ids of
// generation_config.json / config.json, and the chat template (tokenizer_config.json's
// chat_template, else chat_template.jinja, else chat_template.json).
#pragma once

#include <string>

#include "base/status.h"
#include "tokenizer/hf_tokenizer_json.h"
#include "tokenizer/vocab.h"

namespace pagoda::loader {

struct HfTokenizerFiles {
  tokenizer::Vocab vocab;
  std::string chat_template;  // empty if none
  tokenizer::HfTokenizerSummary summary;
};

// Errors name the directory and file. tokenizer.json is required; the others are optional.
Result<HfTokenizerFiles> load_hf_tokenizer(const std::string& dir);

}  // namespace pagoda::loader
