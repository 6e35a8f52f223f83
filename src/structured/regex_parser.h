// The regex syntax (regex.h) → an AST over Unicode code points. Literals and classes both become
// sets of code point ranges; groups disappear into the tree; anchors at the very ends are
// dropped. Everything the NFA cannot express is refused here with invalid_argument naming the
// construct and its byte offset, so the NFA construction (regex.cc) only meets valid trees.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "structured/utf8_ranges.h"

namespace pagoda::structured {

inline constexpr int64_t kMaxRegexRepeat = 100000;  // the largest count in {n,m}
inline constexpr int kMaxRegexNesting = 256;        // groups inside groups

struct RegexNode {
  enum class Kind : uint8_t {
    kEmpty,   // matches ""
    kSet,     // one code point from `ranges` (normalized; empty: matches nothing)
    kConcat,  // children in sequence
    kAlt,     // one of the children
    kRepeat,  // children[0] repeated min..max times (max < 0: unbounded)
  };
  Kind kind = Kind::kEmpty;
  uint32_t offset = 0;  // byte offset in the pattern, for messages
  int32_t min = 0, max = 0;
  std::vector<int32_t> children;       // node ids
  std::vector<CodePointRange> ranges;  // kSet
};

struct RegexAst {
  std::vector<RegexNode> nodes;  // children come before their parents
  int32_t root = 0;
};

// Parses `pattern` (valid UTF-8 is checked here). Sizes are not limited here beyond the pattern
// length, the nesting and repetition counts; compile_regex checks the NFA size.
Result<RegexAst> parse_regex(std::string_view pattern);

}  // namespace pagoda::structured
