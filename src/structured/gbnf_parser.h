// GBNF text → a syntax tree (GbnfAst), for gbnf.cc to lower into a Grammar. The parser follows
// llama.cpp's reading of the syntax (rules end at a newline unless inside parentheses or right
// after `|` or `::=`; `#` comments; postfix operators apply to the preceding item, so `"a"*+`
// is ("a"*)+) and refuses what llama.cpp would misread or what cannot be lowered: undefined or
// twice-defined rules, empty or reversed classes, surrogate or out-of-range code points, token
// references (`<[id]>`, `<think>`) and their `!` negations, repetition counts above
// kMaxGbnfRepetition, nesting deeper than kMaxGbnfNesting, invalid UTF-8 and NUL bytes. Every
// message names the line and column ("gbnf: line 3 col 7: ...").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace pagoda::structured {

inline constexpr size_t kMaxGbnfBytes = size_t{1} << 20;  // grammar text
inline constexpr int64_t kMaxGbnfRepetition = 10000;      // n and m in {n,m}
inline constexpr int32_t kMaxGbnfNesting = 256;           // groups and postfix operators

struct GbnfCharRange {
  uint32_t lo = 0, hi = 0;  // inclusive code points (never surrogates, <= U+10FFFF)
};

struct GbnfNode {
  enum class Kind : uint8_t {
    kLiteral,  // text (UTF-8, may be empty)
    kClass,    // ranges, negated
    kAny,      // `.`: any code point
    kRef,      // rule: index into GbnfAst::rules
    kSeq,      // children in order (2 or more)
    kAlt,      // children as alternatives (2 or more)
    kRepeat,   // children[0] repeated min..max times (max < 0: unbounded)
  };
  Kind kind = Kind::kLiteral;
  bool negated = false;
  uint32_t offset = 0;  // byte offset in the text, for messages
  int32_t rule = -1;
  int32_t min = 0, max = 0;
  std::string text;
  std::vector<GbnfCharRange> ranges;
  std::vector<GbnfNode> children;
};

struct GbnfRule {
  std::string name;
  bool defined = false;
  uint32_t offset = 0;  // of the definition, or of the first reference while undefined
  GbnfNode body;
};

struct GbnfAst {
  std::vector<GbnfRule> rules;  // in order of first mention
  int32_t root = -1;
};

// Parses and checks `text`: every referenced rule defined once, `root` defined.
Result<GbnfAst> parse_gbnf_ast(std::string_view text);

// "line L col C" for a byte offset (columns count code points from 1).
std::string gbnf_position(std::string_view text, size_t offset);

}  // namespace pagoda::structured
