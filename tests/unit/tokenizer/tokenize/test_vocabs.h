// Helpers for the tokenizer tests: loading fixture vocabularies (cached per process) and building
// tiny handcrafted ones.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace pagoda::testing {

// The tokenizer of a GGUF file via loader::load_vocab + Tokenizer::create, cached by path.
// Fails the current test (and returns nullptr) on error.
const tokenizer::Tokenizer* load_gguf_tokenizer(const std::filesystem::path& path);

// The vocabulary of a GGUF file (uncached).
tokenizer::Vocab load_gguf_vocab(const std::filesystem::path& path);

// Whole file as bytes.
std::string read_file(const std::filesystem::path& path);

// "a b c" → ids, "" → {}.
std::vector<tokenizer::TokenId> parse_ids(const std::string& line);

}  // namespace pagoda::testing
