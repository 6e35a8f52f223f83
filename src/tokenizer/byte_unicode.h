// GPT-2's reversible byte ↔ code point mapping for byte-level BPE: printable Latin-1 bytes
// ('!'..'~', '¡'..'¬', '®'..'ÿ') map to themselves, the other 68 bytes to U+0100.. in byte order
// (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A). Vocab entries are stored in the mapped form.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pagoda::tokenizer {

// UTF-8 of the code point standing for `byte`.
std::string_view byte_to_unicode(uint8_t byte);

// The byte a code point stands for, or -1 if it is not in the mapping.
int unicode_to_byte(uint32_t cp);

// Maps every byte of `bytes` (appending to `out`).
void bytes_to_unicode(std::string_view bytes, std::string& out);

}  // namespace pagoda::tokenizer
