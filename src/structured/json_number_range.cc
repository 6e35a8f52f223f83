#include "structured/json_number_range.h"

#include <string_view>
#include <vector>

namespace pagoda::structured {
namespace {

std::string digit_class(char a, char b) {
  if (a == b) return std::string(1, a);
  return std::string("[") + a + "-" + b + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  if (n == 1) return "[0-9]";
  return "[0-9]{" + std::to_string(n) + "}";
}

bool all_of_char(std::string_view s, char c) {
  return s.find_first_not_of(c) == std::string_view::npos;
}

// Appends to `out` regexes (without '|') that together match exactly the decimal strings of
// length lo.size() between lo and hi (equal lengths, lo <= hi), each prefixed by `prefix`.
void same_length_ranges(std::string_view lo, std::string_view hi, const std::string& prefix,
                        std::vector<std::string>& out) {
  if (lo.empty() || lo == hi) {
    out.push_back(prefix + std::string(lo));
    return;
  }
  if (lo[0] == hi[0]) {
    same_length_ranges(lo.substr(1), hi.substr(1), prefix + lo[0], out);
    return;
  }
  const size_t rest = lo.size() - 1;
  const bool lo_rest_zero = all_of_char(lo.substr(1), '0');
  const bool hi_rest_nine = all_of_char(hi.substr(1), '9');
  char first = lo[0];
  char last = hi[0];
  if (!lo_rest_zero) {
    same_length_ranges(lo.substr(1), std::string(rest, '9'), prefix + lo[0], out);
    ++first;
  }
  if (!hi_rest_nine) --last;
  if (first <= last) out.push_back(prefix + digit_class(first, last) + any_digits(rest));
  if (!hi_rest_nine) same_length_ranges(std::string(rest, '0'), hi.substr(1), prefix + hi[0], out);
}

size_t num_digits(uint64_t v) {
  size_t n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

uint64_t pow10(size_t n) {
  uint64_t v = 1;
  for (size_t i = 0; i < n; ++i)
    v *= 10;
  return v;
}

std::string join_alternatives(const std::vector<std::string>& pieces) {
  if (pieces.size() == 1) return pieces[0];
  std::string out = "(?:";
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (i > 0) out += '|';
    out += pieces[i];
  }
  out += ')';
  return out;
}

constexpr uint64_t kUnbounded = ~uint64_t{0};

// Canonical decimal texts of [lo, hi] (hi = kUnbounded: no upper bound), lo <= hi < 10^19.
std::string nonnegative_range(uint64_t lo, uint64_t hi) {
  std::vector<std::string> pieces;
  const bool bounded = hi != kUnbounded;
  const size_t lo_digits = num_digits(lo);
  const size_t hi_digits = bounded ? num_digits(hi) : lo_digits;
  for (size_t d = lo_digits; d <= hi_digits; ++d) {
    const uint64_t a = d == lo_digits ? lo : pow10(d - 1);
    const uint64_t b = (bounded && d == hi_digits) ? hi : pow10(d) - 1;
    same_length_ranges(std::to_string(a), std::to_string(b), "", pieces);
  }
  if (!bounded) pieces.push_back("[1-9][0-9]{" + std::to_string(lo_digits) + ",}");
  return join_alternatives(pieces);
}

constexpr std::string_view kNonzeroFraction = "\\.[0-9]*[1-9][0-9]*";

}  // namespace

std::string integer_range_regex(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> pieces;
  if (!lo || *lo < 0) {
    // Negative values: magnitudes in [max(1, -hi), -lo].
    const uint64_t m_lo = (hi && *hi < 0) ? static_cast<uint64_t>(-*hi) : 1;
    const uint64_t m_hi = lo ? static_cast<uint64_t>(-*lo) : kUnbounded;
    pieces.push_back("\\-" + nonnegative_range(m_lo, m_hi));
  }
  if (!hi || *hi >= 0) {
    const uint64_t a = (lo && *lo > 0) ? static_cast<uint64_t>(*lo) : 0;
    pieces.push_back(nonnegative_range(a, hi ? static_cast<uint64_t>(*hi) : kUnbounded));
  }
  return join_alternatives(pieces);
}

std::optional<std::string> number_range_regex(std::optional<int64_t> lo, bool lo_exclusive,
                                              std::optional<int64_t> hi, bool hi_exclusive) {
  std::vector<std::string> pieces;
  // Integer values (fraction absent or all zeros).
  std::optional<int64_t> int_lo = lo, int_hi = hi;
  if (int_lo && lo_exclusive) *int_lo += 1;
  if (int_hi && hi_exclusive) *int_hi -= 1;
  if (!int_lo || !int_hi || *int_lo <= *int_hi)
    pieces.push_back(integer_range_regex(int_lo, int_hi) + "(?:\\.0+)?");
  // I.F with F non-zero lies strictly between I and I + 1: allowed iff lo <= I and I + 1 <= hi
  // (the bounds are integers, so their exclusiveness does not matter for an open interval).
  {
    const int64_t a = (lo && *lo > 0) ? *lo : 0;
    if (!hi || a <= *hi - 1) {
      const uint64_t b = hi ? static_cast<uint64_t>(*hi - 1) : kUnbounded;
      pieces.push_back(nonnegative_range(static_cast<uint64_t>(a), b) +
                       std::string(kNonzeroFraction));
    }
  }
  // -I.F lies strictly between -(I + 1) and -I: allowed iff lo <= -(I + 1) and -I <= hi.
  {
    const int64_t a = (hi && *hi < 0) ? -*hi : 0;
    if (!lo || a <= -*lo - 1) {
      const uint64_t b = lo ? static_cast<uint64_t>(-*lo - 1) : kUnbounded;
      pieces.push_back("\\-" + nonnegative_range(static_cast<uint64_t>(a), b) +
                       std::string(kNonzeroFraction));
    }
  }
  if (pieces.empty()) return std::nullopt;
  return join_alternatives(pieces);
}

}  // namespace pagoda::structured
