// Regexes for JSON numbers within bounds (the minimum/maximum keywords of JSON Schema), built
// by the classic digit-range decomposition: [lo, hi] is split into runs of equal digit count,
// and each run into a prefix that is fixed and digits that range freely (e.g. [17, 243] →
// 1[7-9] | [2-9][0-9] | 1[0-9]{2} | 2[0-3][0-9] | 24[0-3]). The regexes match only canonical
// texts (no leading zeros, no "-0", no exponent), a subset of the JSON texts of those values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace pagoda::structured {

// Bounds beyond this magnitude are refused by the callers (json_schema.cc names the keyword).
inline constexpr int64_t kMaxNumberBound = 1000000000000000000;  // 1e18

// The canonical JSON integers in [lo, hi]; an absent bound is unbounded on that side.
// Precondition: lo <= hi when both are given, |bounds| <= kMaxNumberBound. Every returned regex
// is self-contained (safe to concatenate) and non-empty-language.
std::string integer_range_regex(std::optional<int64_t> lo, std::optional<int64_t> hi);

// JSON numbers x with lo <(=) x <(=) hi for integer-valued bounds, written as an integer part
// and an optional fraction (`12`, `12.50`, `-0.5`; no exponent). nullopt when no number
// satisfies the bounds. Precondition: |bounds| <= kMaxNumberBound.
std::optional<std::string> number_range_regex(std::optional<int64_t> lo, bool lo_exclusive,
                                              std::optional<int64_t> hi, bool hi_exclusive);

}  // namespace pagoda::structured
