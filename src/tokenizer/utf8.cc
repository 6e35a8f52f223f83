// UTF-8 validation follows the well-formed byte sequence table of the Unicode standard (Table 3-7):
// the second byte's range depends on the lead byte, which rules out overlongs and surrogates.
#include "tokenizer/utf8.h"

namespace pagoda::tokenizer::utf8 {
namespace {

// Expected length for a lead byte (0 = not a lead byte) and the allowed range of the second byte.
struct LeadInfo {
  uint8_t length;
  uint8_t second_lo;
  uint8_t second_hi;
};

LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};
  return {0, 0, 0};
}

// Number of bytes from s[pos] that form a valid prefix of a sequence (>= 1 if the lead byte is
// valid), capped at the sequence length; 0 if the lead byte is invalid.
size_t valid_prefix_length(std::string_view s, size_t pos, LeadInfo info) {
  if (info.length == 0) return 0;
  size_t n = 1;
  for (; n < info.length && pos + n < s.size(); ++n) {
    const auto b = static_cast<uint8_t>(s[pos + n]);
    const uint8_t lo = n == 1 ? info.second_lo : 0x80;
    const uint8_t hi = n == 1 ? info.second_hi : 0xBF;
    if (b < lo || b > hi) break;
  }
  return n;
}

}  // namespace

size_t valid_sequence_length(std::string_view s, size_t pos) {
  const LeadInfo info = lead_info(static_cast<uint8_t>(s[pos]));
  const size_t n = valid_prefix_length(s, pos, info);
  return n == info.length ? n : 0;
}

uint32_t decode(std::string_view s, size_t pos, size_t len) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (len == 1) return b0;
  static constexpr uint8_t kLeadMask[5] = {0, 0, 0x1F, 0x0F, 0x07};
  uint32_t cp = b0 & kLeadMask[len];
  for (size_t i = 1; i < len; ++i)
    cp = (cp << 6) | (static_cast<uint8_t>(s[pos + i]) & 0x3F);
  return cp;
}

void append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const auto b = static_cast<uint8_t>(s[pos]);
    if (b < 0x80) {
      ++pos;
      continue;
    }
    const size_t n = valid_sequence_length(s, pos);
    if (n == 0) return false;
    pos += n;
  }
  return true;
}

size_t incomplete_tail_length(std::string_view s) {
  // A tail is at most 3 bytes; find the last lead byte among them.
  const size_t max_back = s.size() < 3 ? s.size() : 3;
  for (size_t back = 1; back <= max_back; ++back) {
    const size_t pos = s.size() - back;
    const auto b = static_cast<uint8_t>(s[pos]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    const LeadInfo info = lead_info(b);
    if (info.length <= back) return 0;  // ASCII, invalid lead, or complete sequence
    return valid_prefix_length(s, pos, info) == back ? back : 0;
  }
  return 0;
}

std::string sanitize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const auto b = static_cast<uint8_t>(s[pos]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++pos;
      continue;
    }
    const LeadInfo info = lead_info(b);
    const size_t n = valid_prefix_length(s, pos, info);
    if (n != 0 && n == info.length) {
      out.append(s.substr(pos, n));
      pos += n;
    } else {
      out.append("\xEF\xBF\xBD");
      pos += n == 0 ? 1 : n;  // a maximal subpart is the valid prefix (or the single bad byte)
    }
  }
  return out;
}

}  // namespace pagoda::tokenizer::utf8
