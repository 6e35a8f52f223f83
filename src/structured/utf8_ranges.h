// Code point ranges → UTF-8 byte-range sequences, the standard splitting RE2 and regex-automata
// use: a range [lo, hi] of scalar values is cut where the encoded length changes and where the
// leading bytes stop sharing a prefix, until each piece is a product of byte ranges
// ([E1-EC][80-BF][80-BF], say). The union of the sequences is exactly the set of UTF-8
// encodings of the scalar values in the range (surrogates D800-DFFF are skipped, nothing above
// U+10FFFF), and no byte string matches two sequences.
#pragma once

#include <cstdint>
#include <vector>

namespace pagoda::structured {

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// An inclusive range of code points.
struct CodePointRange {
  uint32_t lo = 0, hi = 0;
  bool operator==(const CodePointRange&) const = default;
};

// One alternative of the split: `len` byte ranges, the i-th matching the i-th byte.
struct Utf8Sequence {
  struct Range {
    uint8_t lo = 0, hi = 0;
  };
  uint8_t len = 0;  // 1-4
  Range bytes[4];
};

// Appends to `out`, in increasing order, the sequences for [lo, hi] ∩ scalar values.
// Precondition: lo <= hi <= kMaxCodePoint.
void append_utf8_sequences(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out);

// Sorts `ranges` and merges overlapping and adjacent ones (in place).
void normalize_ranges(std::vector<CodePointRange>& ranges);

// The complement of normalized `ranges` within 0..kMaxCodePoint (surrogates stay in the result;
// append_utf8_sequences skips them).
std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges);

}  // namespace pagoda::structured
