// The mapping is built once into two small tables (256 strings; code point → byte up to U+0143).
#include "tokenizer/byte_unicode.h"

#include <array>

#include "tokenizer/utf8.h"

namespace pagoda::tokenizer {
namespace {

bool maps_to_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> byte_to_utf8;
  std::array<int16_t, 512> cp_to_byte;  // every mapped code point is < 0x100 + 68

  Tables() {
    cp_to_byte.fill(-1);
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = maps_to_itself(b) ? static_cast<uint32_t>(b) : 256u + next++;
      utf8::append(byte_to_utf8[b], cp);
      cp_to_byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables kTables;
  return kTables;
}

}  // namespace

std::string_view byte_to_unicode(uint8_t byte) {
  return tables().byte_to_utf8[byte];
}

int unicode_to_byte(uint32_t cp) {
  return cp < tables().cp_to_byte.size() ? tables().cp_to_byte[cp] : -1;
}

void bytes_to_unicode(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (char c : bytes)
    out.append(t.byte_to_utf8[static_cast<uint8_t>(c)]);
}

}  // namespace pagoda::tokenizer
