// Fuzzes pagoda::OutputParser. Input: byte 0 picks the formats (bits 0-1 tool-call format, bits
// 2-3 reasoning format), byte 1 seeds the cut points, the rest is the model's output. Checks:
// the merged response is the same whole, byte by byte and at seeded random cuts; every delta keeps
// the protocol (a call starts with its id and name at the next index, later deltas only append
// arguments); content + reasoning never exceed the input, arguments stay within a small multiple
// of it (a call read whole is re-serialized); num_tool_calls counts the calls; with no formats the
// content is the input; and for valid UTF-8 input every delta's parts are valid UTF-8.
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "pagoda/output_parser.h"
#include "unit/structured/parsers/output_parser_harness.h"

namespace {

using pagoda::OutputParserOptions;
using pagoda::ParsedDelta;
using pagoda::ReasoningFormat;
using pagoda::ToolCallFormat;
using pagoda::testing::Merged;
using pagoda::testing::parse_with_cuts;

void check(bool ok) {
  if (!ok) std::abort();
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    if (b < 0x80) {
      n = 1;
    } else if ((b & 0xE0) == 0xC0 && b >= 0xC2) {
      n = 2;
    } else if ((b & 0xF0) == 0xE0) {
      n = 3;
    } else if ((b & 0xF8) == 0xF0 && b <= 0xF4) {
      n = 4;
    }
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    const auto b1 = static_cast<unsigned char>(n > 1 ? s[i + 1] : 0);
    if ((b == 0xE0 && b1 < 0xA0) || (b == 0xED && b1 > 0x9F) || (b == 0xF0 && b1 < 0x90) ||
        (b == 0xF4 && b1 > 0x8F)) {
      return false;  // overlong, surrogate or past U+10FFFF
    }
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  OutputParserOptions options;
  options.tool_format = static_cast<ToolCallFormat>(data[0] & 3);
  options.reasoning = static_cast<ReasoningFormat>(((data[0] >> 2) & 3) % 3);
  options.id_prefix = "call_";
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);

  const Merged whole = parse_with_cuts(options, text, {});
  check(whole.protocol_error.empty());
  check(whole.content.size() + whole.reasoning.size() <= text.size());
  check(whole.num_tool_calls == static_cast<int32_t>(whole.calls.size()));
  size_t arguments = 0;
  for (const auto& call : whole.calls)
    arguments += call.arguments.size();
  check(arguments <= 5 * text.size() + 64);
  if (options.tool_format == ToolCallFormat::kNone && options.reasoning == ReasoningFormat::kNone) {
    check(whole.content == text);
  }

  std::mt19937 rng(data[1]);
  std::vector<size_t> cuts;
  for (size_t i = 1; i < text.size(); ++i) {
    if (rng() % 4 == 0) cuts.push_back(i);
  }
  check(parse_with_cuts(options, text, cuts) == whole);

  // Byte by byte, checking each delta's UTF-8 when the input is valid.
  const bool utf8 = valid_utf8(text);
  pagoda::OutputParser parser(options);
  Merged bytewise;
  const auto take = [&](const ParsedDelta& delta) {
    if (utf8) {
      check(valid_utf8(delta.content) && valid_utf8(delta.reasoning));
      for (const auto& call : delta.tool_calls)
        check(valid_utf8(call.arguments) && valid_utf8(call.name));
    }
    bytewise.merge(delta);
  };
  for (size_t i = 0; i < text.size(); ++i)
    take(parser.feed(text.substr(i, 1)));
  take(parser.finish());
  bytewise.num_tool_calls = parser.num_tool_calls();
  check(bytewise == whole);
  return 0;
}
