// The regular parts of a JSON Schema string (json_schema.cc): the regex of one character of a
// JSON string as written in JSON text, string lengths, `format`s, `pattern`s rewritten to match
// JSON-escaped text, and keys that are not among a set of names. Every regex returned is
// self-contained (a single unit or a group), so it can be concatenated or quantified.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::structured::json_schema_detail {

// One code point of string content as JSON may write it: a raw character (not '"', '\\' or a
// control character), a short escape, or \uXXXX (a surrogate pair counts as one code point; a
// lone surrogate is refused so every accepted text decodes to valid Unicode).
extern const std::string_view kJsonCharRegex;
// Any JSON string, quotes included.
extern const std::string_view kJsonStringRegex;

// The canonical JSON text of `value` (quotes included): '"' '\\' and control characters escaped
// (\b \f \n \r \t, else \u00xx), everything else raw UTF-8 — what nlohmann and Python write.
std::string json_string_text(std::string_view value);

// The content (between the quotes) a string value may have, with the bounds on its length in
// code points that every match satisfies (max_length nullopt: unbounded).
struct StringContent {
  std::string regex;
  int64_t min_length = 0;
  std::optional<int64_t> max_length;
};

// minLength/maxLength alone: min..max code points. Precondition: 0 <= min <= max (if any) and
// both small enough for one regex (kMaxLengthInRegex).
std::string length_content_regex(int64_t min, std::optional<int64_t> max);
inline constexpr int64_t kMaxLengthInRegex = 256;

// A JSON Schema (ECMA-262) `pattern`, unanchored unless it starts with ^ / ends with $ (per
// top-level alternative), as a regex over the JSON-escaped content: a character the pattern
// matches that JSON must escape ('"', '\\', control characters) is matched in its canonical
// escaped form (`\"`, `\\`, `\n`, `\u0001`), so only valid JSON string content is produced;
// padding around an unanchored match is any content. Refused (invalid_argument, the message
// naming the construct and its offset): lookaround, backreferences, word boundaries, anchors
// other than a leading ^ / trailing $, Unicode property escapes, counts above 1000.
Result<StringContent> pattern_content(std::string_view pattern);

// The `format`s with a regex (date-time, date, time, uuid, email, uri, ipv4, hostname); nullopt
// for any other format name.
std::optional<StringContent> format_content(std::string_view format);

// A format JSON Schema defines (ipv6, uri-reference, iri, regex, duration, ...) without a regex
// here: refused. Other names without a regex are custom formats: annotations.
bool is_unenforced_standard_format(std::string_view format);

// A regex for a JSON object key (quotes included) that is none of `names`. Keys are written in
// canonical form (json_string_text: no optional escapes), which makes "not one of the names" a
// property of the text. nullopt when the names are too long for the regex (a name over 128 code
// points, or over 64 KiB of names): the caller then allows any key.
std::optional<std::string> key_excluding_regex(const std::vector<std::string>& names);

}  // namespace pagoda::structured::json_schema_detail
