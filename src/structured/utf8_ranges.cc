#include "structured/utf8_ranges.h"

#include <algorithm>

namespace pagoda::structured {

namespace {

constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;
// The largest code point with an encoding of 1, 2 and 3 bytes.
constexpr uint32_t kMaxForLength[3] = {0x7F, 0x7FF, 0xFFFF};

// Encodes a scalar value; returns the length.
int encode(uint32_t cp, uint8_t (&out)[4]) {
  if (cp <= 0x7F) {
    out[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp <= 0x7FF) {
    out[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    out[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp <= 0xFFFF) {
    out[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    out[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    out[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  out[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  out[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  out[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

}  // namespace

void append_utf8_sequences(uint32_t lo, uint32_t hi, std::vector<Utf8Sequence>& out) {
  // A stack of pending ranges, the next one to split on top; each split pushes its upper half
  // first so the sequences come out in increasing order. Depth stays small (at most one pending
  // range per split level).
  CodePointRange stack[32];
  int depth = 0;
  stack[depth++] = {lo, hi};
  while (depth > 0) {
    CodePointRange r = stack[--depth];
    // Cut out the surrogates.
    if (r.lo <= kSurrogateHi && r.hi >= kSurrogateLo) {
      if (r.hi > kSurrogateHi) stack[depth++] = {kSurrogateHi + 1, r.hi};
      if (r.lo < kSurrogateLo) stack[depth++] = {r.lo, kSurrogateLo - 1};
      continue;
    }
    // Split where the encoded length changes.
    bool split = false;
    for (uint32_t max : kMaxForLength) {
      if (r.lo <= max && r.hi > max) {
        stack[depth++] = {max + 1, r.hi};
        stack[depth++] = {r.lo, max};
        split = true;
        break;
      }
    }
    if (split) continue;
    if (r.hi <= 0x7F) {
      Utf8Sequence seq;
      seq.len = 1;
      seq.bytes[0] = {static_cast<uint8_t>(r.lo), static_cast<uint8_t>(r.hi)};
      out.push_back(seq);
      continue;
    }
    // Split until every continuation byte below the first differing one spans 80-BF.
    for (int i = 1; i < 4; ++i) {
      const uint32_t mask = (uint32_t{1} << (6 * i)) - 1;
      if ((r.lo & ~mask) != (r.hi & ~mask)) {
        if ((r.lo & mask) != 0) {
          stack[depth++] = {(r.lo | mask) + 1, r.hi};
          stack[depth++] = {r.lo, r.lo | mask};
          split = true;
          break;
        }
        if ((r.hi & mask) != mask) {
          stack[depth++] = {r.hi & ~mask, r.hi};
          stack[depth++] = {r.lo, (r.hi & ~mask) - 1};
          split = true;
          break;
        }
      }
    }
    if (split) continue;
    uint8_t a[4], b[4];
    const int len = encode(r.lo, a);
    encode(r.hi, b);
    Utf8Sequence seq;
    seq.len = static_cast<uint8_t>(len);
    for (int i = 0; i < len; ++i)
      seq.bytes[i] = {a[i], b[i]};
    out.push_back(seq);
  }
}

void normalize_ranges(std::vector<CodePointRange>& ranges) {
  if (ranges.empty()) return;
  std::sort(ranges.begin(), ranges.end(), [](const CodePointRange& x, const CodePointRange& y) {
    return x.lo < y.lo || (x.lo == y.lo && x.hi < y.hi);
  });
  size_t n = 0;
  for (size_t i = 1; i < ranges.size(); ++i) {
    CodePointRange& last = ranges[n];
    if (ranges[i].lo <= last.hi || ranges[i].lo - last.hi == 1) {
      last.hi = std::max(last.hi, ranges[i].hi);
    } else {
      ranges[++n] = ranges[i];
    }
  }
  ranges.resize(n + 1);
}

std::vector<CodePointRange> complement_ranges(const std::vector<CodePointRange>& ranges) {
  std::vector<CodePointRange> out;
  uint32_t next = 0;  // the first code point not yet covered
  bool done = false;
  for (const CodePointRange& r : ranges) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    if (r.hi >= kMaxCodePoint) {
      done = true;
      break;
    }
    next = r.hi + 1;
  }
  if (!done) out.push_back({next, kMaxCodePoint});
  return out;
}

}  // namespace pagoda::structured
