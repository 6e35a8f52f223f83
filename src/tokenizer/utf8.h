// UTF-8 helpers shared by the tokenizers and the detokenizer. "Valid" means RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::tokenizer::utf8 {

// The sequence length a lead byte announces, the way llama.cpp splits text into symbols:
// ASCII and stray continuation bytes give 1, 0xC0-0xDF 2, 0xE0-0xEF 3, 0xF0-0xFF 4.
inline size_t lead_length(uint8_t lead) {
  static constexpr uint8_t kLookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLookup[lead >> 4];
}

// Length of the valid sequence starting at s[pos], or 0 if the bytes there do not start one
// (invalid or truncated). Precondition: pos < s.size().
size_t valid_sequence_length(std::string_view s, size_t pos);

// Decodes the valid sequence of `len` bytes at s[pos]. Precondition: valid_sequence_length == len.
uint32_t decode(std::string_view s, size_t pos, size_t len);

// Appends the UTF-8 encoding of `cp` (cp <= 0x10FFFF).
void append(std::string& out, uint32_t cp);

bool is_valid(std::string_view s);

// Number of bytes at the end of `s` that are a proper prefix of a valid sequence and could still
// be completed by more bytes (0-3).
size_t incomplete_tail_length(std::string_view s);

// Copies `s`, replacing each maximal invalid subpart with U+FFFD (the Unicode "substitution of
// maximal subparts" practice, as Python's errors="replace" does).
std::string sanitize(std::string_view s);

}  // namespace pagoda::tokenizer::utf8
