// Python str semantics over UTF-8 (see py_text.h).
#include "jinja/py_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace pagoda::jinja {

char32_t decode_utf8(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    if (i + k >= s.size()) return false;
    const auto b = static_cast<unsigned char>(s[i + k]);
    return b >= lo && b <= hi;
  };
  auto bits = [&](size_t k) { return static_cast<char32_t>(s[i + k] & 0x3F); };
  char32_t cp = 0;
  size_t len = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF && cont(1, 0x80, 0xBF)) {
    cp = ((b0 & 0x1Fu) << 6) | bits(1);
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned char lo = b0 == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = b0 == 0xED ? 0x9F : 0xBF;
    if (cont(1, lo, hi) && cont(2, 0x80, 0xBF)) {
      cp = ((b0 & 0x0Fu) << 12) | (bits(1) << 6) | bits(2);
      len = 3;
    }
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned char lo = b0 == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = b0 == 0xF4 ? 0x8F : 0xBF;
    if (cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF)) {
      cp = ((b0 & 0x07u) << 18) | (bits(1) << 12) | (bits(2) << 6) | bits(3);
      len = 4;
    }
  }
  if (len == 0) {
    ++i;
    return 0xDC00 + b0;  // surrogateescape
  }
  i += len;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
    out += static_cast<char>(cp - 0xDC00);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::u32string to_code_points(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();)
    out += decode_utf8(s, i);
  return out;
}

std::string from_code_points(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t c : cps)
    append_utf8(out, c);
  return out;
}

bool is_ascii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

size_t count_code_points(std::string_view s) {
  if (is_ascii(s)) return s.size();
  size_t n = 0;
  for (size_t i = 0; i < s.size(); ++n)
    decode_utf8(s, i);
  return n;
}

std::optional<size_t> find_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t c = decode_utf8(s, i);
    if (c >= 0xDC80 && c <= 0xDCFF && i == at + 1) return at;
  }
  return std::nullopt;
}

bool py_isspace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_is_line_break(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

char32_t to_upper_cp(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c < 0x100) {
    if (c == 0xB5) return 0x39C;
    if (c == 0xFF) return 0x178;
    if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
    return c;
  }
  if (c <= 0x17F) {
    if (c == 0x131) return 'I';
    if (c == 0x17F) return 'S';
    if ((c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c & 1) ? c - 1 : c;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c : c - 1;
    return c;
  }
  if (c >= 0x370 && c <= 0x3FF) {
    if ((c >= 0x3B1 && c <= 0x3C1) || (c >= 0x3C3 && c <= 0x3CB)) return c - 32;
    if (c == 0x3C2) return 0x3A3;
    if (c == 0x3AC) return 0x386;
    if (c >= 0x3AD && c <= 0x3AF) return c - 37;
    if (c == 0x3CC) return 0x38C;
    if (c == 0x3CD || c == 0x3CE) return c - 63;
    return c;
  }
  if (c >= 0x400 && c <= 0x52F) {
    if (c >= 0x430 && c <= 0x44F) return c - 32;
    if (c >= 0x450 && c <= 0x45F) return c - 80;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0)) {
      return (c & 1) ? c - 1 : c;
    }
    if (c == 0x4CF) return 0x4C0;
    if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? c : c - 1;
    return c;
  }
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF)) return (c & 1) ? c - 1 : c;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return c;
}

char32_t to_lower_cp(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c < 0x100) return (c >= 0xC0 && c <= 0xDE && c != 0xD7) ? c + 32 : c;
  if (c <= 0x17F) {
    if (c == 0x130) return 'i';
    if (c == 0x178) return 0xFF;
    if ((c <= 0x137) || (c >= 0x14A && c <= 0x177)) return (c & 1) ? c : c + 1;
    if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1) ? c + 1 : c;
    return c;
  }
  if (c >= 0x370 && c <= 0x3FF) {
    if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 32;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    return c;
  }
  if (c >= 0x400 && c <= 0x52F) {
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if (c <= 0x40F) return c + 80;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0)) {
      return (c & 1) ? c : c + 1;
    }
    if (c == 0x4C0) return 0x4CF;
    if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? c + 1 : c;
    return c;
  }
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if (c == 0x1E9E) return 0xDF;
  if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF)) return (c & 1) ? c : c + 1;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return c;
}

bool py_iscased(char32_t c) {
  return c == 0xDF || to_upper_cp(c) != c || to_lower_cp(c) != c;
}

namespace {

bool is_symbol_or_punct_block(char32_t c) {
  return (c >= 0x2000 && c <= 0x2BFF) || (c >= 0x3000 && c <= 0x303F) ||
         (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF20) ||
         (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65) ||
         (c >= 0x1F000 && c <= 0x1FAFF) || (c >= 0xDC80 && c <= 0xDCFF) ||
         (c >= 0xE000 && c <= 0xF8FF);
}

}  // namespace

bool py_isdigit(char32_t c) {
  return (c >= '0' && c <= '9') || (c >= 0x660 && c <= 0x669) || (c >= 0x6F0 && c <= 0x6F9) ||
         (c >= 0x966 && c <= 0x96F) || (c >= 0xFF10 && c <= 0xFF19);
}

bool py_isalpha(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c < 0x100)
    return c == 0xAA || c == 0xB5 || c == 0xBA || (c >= 0xC0 && c != 0xD7 && c != 0xF7);
  if (py_isspace(c) || py_isdigit(c) || is_symbol_or_punct_block(c)) return false;
  return true;
}

bool py_isalnum(char32_t c) {
  return py_isalpha(c) || py_isdigit(c);
}
bool py_is_word(char32_t c) {
  return c == '_' || py_isalnum(c);
}

std::string py_upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t c = decode_utf8(s, i);
    if (c == 0xDF) {
      out += "SS";
    } else {
      append_utf8(out, to_upper_cp(c));
    }
  }
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  const std::u32string cps = to_code_points(s);
  for (size_t k = 0; k < cps.size(); ++k) {
    const char32_t c = cps[k];
    if (c == 0x130) {
      out += "i\xCC\x87";  // i + COMBINING DOT ABOVE
    } else if (c == 0x3A3) {
      // Final sigma: preceded by a cased letter and not followed by one.
      const bool before = k > 0 && py_iscased(cps[k - 1]);
      const bool after = k + 1 < cps.size() && py_iscased(cps[k + 1]);
      append_utf8(out, before && !after ? 0x3C2 : 0x3C3);
    } else {
      append_utf8(out, to_lower_cp(c));
    }
  }
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = decode_utf8(s, i);
    if (first) {
      if (c == 0xDF) {
        out += "Ss";
      } else {
        append_utf8(out, to_upper_cp(c));
      }
      first = false;
    } else {
      append_utf8(out, to_lower_cp(c));
    }
  }
  return out;
}

std::string py_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = decode_utf8(s, i);
    if (prev_cased) {
      append_utf8(out, to_lower_cp(c));
    } else if (c == 0xDF) {
      out += "Ss";
    } else {
      append_utf8(out, to_upper_cp(c));
    }
    prev_cased = py_iscased(c);
  }
  return out;
}

std::string py_swapcase(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = decode_utf8(s, i);
    const char32_t u = to_upper_cp(c);
    append_utf8(out, u != c ? u : to_lower_cp(c));
  }
  return out;
}

bool py_islower(std::string_view s) {
  bool any = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = decode_utf8(s, i);
    if (to_lower_cp(c) != c) return false;
    if (py_iscased(c)) any = true;
  }
  return any;
}

bool py_isupper(std::string_view s) {
  bool any = false;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = decode_utf8(s, i);
    if (to_upper_cp(c) != c || c == 0xDF) return false;
    if (py_iscased(c)) any = true;
  }
  return any;
}

std::string_view py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::u32string set;
  if (chars != nullptr) set = to_code_points(*chars);
  auto strip_it = [&](char32_t c) {
    return chars == nullptr ? py_isspace(c) : set.find(c) != std::u32string::npos;
  };
  size_t begin = 0;
  if (left) {
    while (begin < s.size()) {
      size_t next = begin;
      if (!strip_it(decode_utf8(s, next))) break;
      begin = next;
    }
  }
  size_t end = s.size();
  if (right) {
    end = begin;
    for (size_t j = begin; j < s.size();) {
      if (!strip_it(decode_utf8(s, j))) end = j;
    }
  }
  return s.substr(begin, end - begin);
}

namespace {

// Splits s (code points) on whitespace runs.
std::vector<std::string> split_whitespace(std::string_view s, int64_t maxsplit, bool reverse) {
  std::u32string cps = to_code_points(s);
  std::vector<std::string> out;
  const size_t n = cps.size();
  if (!reverse) {
    size_t i = 0;
    while (i < n && py_isspace(cps[i]))
      ++i;
    while (i < n) {
      if (maxsplit == 0) {
        out.push_back(from_code_points(std::u32string_view(cps).substr(i)));
        break;
      }
      size_t j = i;
      while (j < n && !py_isspace(cps[j]))
        ++j;
      out.push_back(from_code_points(std::u32string_view(cps).substr(i, j - i)));
      if (maxsplit > 0) --maxsplit;
      i = j;
      while (i < n && py_isspace(cps[i]))
        ++i;
    }
    return out;
  }
  size_t end = n;
  while (end > 0 && py_isspace(cps[end - 1]))
    --end;
  while (end > 0) {
    if (maxsplit == 0) {
      out.push_back(from_code_points(std::u32string_view(cps).substr(0, end)));
      break;
    }
    size_t j = end;
    while (j > 0 && !py_isspace(cps[j - 1]))
      --j;
    out.push_back(from_code_points(std::u32string_view(cps).substr(j, end - j)));
    if (maxsplit > 0) --maxsplit;
    end = j;
    while (end > 0 && py_isspace(cps[end - 1]))
      --end;
  }
  return {out.rbegin(), out.rend()};
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (sep == nullptr) return split_whitespace(s, maxsplit, false);
  std::vector<std::string> out;
  size_t pos = 0;
  while (maxsplit != 0) {
    const size_t at = s.find(*sep, pos);
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, at - pos));
    pos = at + sep->size();
    if (maxsplit > 0) --maxsplit;
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  if (sep == nullptr) return split_whitespace(s, maxsplit, true);
  std::vector<std::string> out;
  size_t end = s.size();
  while (maxsplit != 0 && end >= sep->size()) {
    const size_t at = s.substr(0, end).rfind(*sep);
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
    if (maxsplit > 0) --maxsplit;
  }
  out.emplace_back(s.substr(0, end));
  return {out.rbegin(), out.rend()};
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  size_t start = 0;
  size_t i = 0;
  while (i < s.size()) {
    const size_t at = i;
    const char32_t c = decode_utf8(s, i);
    if (!py_is_line_break(c)) continue;
    size_t end = i;
    if (c == '\r' && i < s.size() && s[i] == '\n') end = ++i;
    out.emplace_back(s.substr(start, (keepends ? end : at) - start));
    start = i;
  }
  if (start < s.size()) out.emplace_back(s.substr(start));
  return out;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count) {
  std::string out;
  if (old.empty()) {
    size_t i = 0;
    while (i < s.size()) {
      if (count != 0) {
        out += repl;
        if (count > 0) --count;
      }
      const size_t at = i;
      decode_utf8(s, i);
      out += s.substr(at, i - at);
    }
    if (count != 0) out += repl;
    return out;
  }
  size_t pos = 0;
  while (count != 0) {
    const size_t at = s.find(old, pos);
    if (at == std::string_view::npos) break;
    out += s.substr(pos, at - pos);
    out += repl;
    pos = at + old.size();
    if (count > 0) --count;
  }
  out += s.substr(pos);
  return out;
}

int64_t py_find(std::string_view s, std::string_view sub, bool reverse) {
  const size_t at = reverse ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<int64_t>(count_code_points(s.substr(0, at)));
}

int64_t py_count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(count_code_points(s)) + 1;
  int64_t n = 0;
  for (size_t pos = s.find(sub); pos != std::string_view::npos;
       pos = s.find(sub, pos + sub.size())) {
    ++n;
  }
  return n;
}

namespace {

bool py_isprintable(char32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0)) return false;
  if (c == 0xAD) return false;
  if (c < 0x300) return true;
  if ((c >= 0x600 && c <= 0x605) || c == 0x61C || c == 0x6DD || c == 0x70F || c == 0x180E ||
      c == 0x1680) {
    return false;
  }
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
      (c >= 0x205F && c <= 0x206F) || c == 0x3000) {
    return false;
  }
  if ((c >= 0xD800 && c <= 0xF8FF) || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB) || c == 0xFFFE ||
      c == 0xFFFF) {
    return false;
  }
  if (c == 0x110BD || (c >= 0x1D173 && c <= 0x1D17A) || c == 0xE0001 ||
      (c >= 0xE0020 && c <= 0xE007F) || c >= 0xF0000) {
    return false;
  }
  return true;
}

void append_hex(std::string& out, char prefix, uint32_t value, int digits) {
  static const char kHex[] = "0123456789abcdef";
  out += '\\';
  out += prefix;
  for (int k = digits - 1; k >= 0; --k)
    out += kHex[(value >> (4 * k)) & 0xF];
}

}  // namespace

void append_py_repr(std::string& out, std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  out += quote;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t c = decode_utf8(s, i);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x80 && c >= 0x20 && c != 0x7F) {
      out += static_cast<char>(c);
    } else if (py_isprintable(c)) {
      out += s.substr(at, i - at);
    } else if (c <= 0xFF) {
      append_hex(out, 'x', c, 2);
    } else if (c <= 0xFFFF) {
      append_hex(out, 'u', c, 4);
    } else {
      append_hex(out, 'U', c, 8);
    }
  }
  out += quote;
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(res.ptr - buf));
  std::string out;
  if (!s.empty() && s[0] == '-') {
    out += '-';
    s.remove_prefix(1);
  }
  const size_t e = s.find('e');
  std::string digits(1, s[0]);
  if (e > 1) digits += s.substr(2, e - 2);
  int exp = 0;
  std::from_chars(s.data() + e + (s[e + 1] == '+' ? 2 : 1), s.data() + s.size(), exp);
  const int decpt = exp + 1;
  const int nd = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= nd) {
      out += digits;
      out.append(static_cast<size_t>(decpt - nd), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
  } else {
    out += digits[0];
    if (nd > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += exp < 0 ? "e-" : "e+";
    const int a = exp < 0 ? -exp : exp;
    if (a < 10) out += '0';
    out += std::to_string(a);
  }
  return out;
}

double py_round(double x, int64_t ndigits) {
  if (!std::isfinite(x) || ndigits > 323) return x;
  if (ndigits < -308) return 0.0 * x;
  if (ndigits < 0) {
    const double p = std::pow(10.0, static_cast<double>(-ndigits));
    const double r = std::nearbyint(x / p) * p;
    return std::isfinite(r) ? r : x;
  }
  std::vector<char> buf(400);
  const int n = std::snprintf(buf.data(), buf.size(), "%.*f", static_cast<int>(ndigits), x);
  if (n < 0 || static_cast<size_t>(n) >= buf.size()) return x;
  return std::strtod(buf.data(), nullptr);
}

namespace {

int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

}  // namespace

std::optional<int64_t> py_parse_int(std::string_view s, int base) {
  s = py_strip(s, nullptr, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  auto has_prefix = [&](char p) {
    return s.size() >= 2 && s[0] == '0' && (s[1] == p || s[1] == p - 32);
  };
  bool prefixed = false;
  if (base == 0) {
    if (has_prefix('x')) {
      base = 16;
    } else if (has_prefix('o')) {
      base = 8;
    } else if (has_prefix('b')) {
      base = 2;
    } else {
      base = 10;
      // Python rejects leading zeros in base 0 ("010"), except all-zero strings.
      if (s.size() > 1 && s[0] == '0' && s.find_first_not_of("0_") != std::string_view::npos) {
        return std::nullopt;
      }
    }
    prefixed = base != 10;
  } else if ((base == 16 && has_prefix('x')) || (base == 8 && has_prefix('o')) ||
             (base == 2 && has_prefix('b'))) {
    prefixed = true;
  }
  if (base < 2 || base > 36) return std::nullopt;
  if (prefixed) {
    s.remove_prefix(2);
    if (!s.empty() && s[0] == '_') s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  uint64_t acc = 0;
  bool prev_digit = false;
  for (char c : s) {
    if (c == '_') {
      if (!prev_digit) return std::nullopt;
      prev_digit = false;
      continue;
    }
    const int d = digit_value(c);
    if (d >= base) return std::nullopt;
    if (acc > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) {
      return std::nullopt;
    }
    acc = acc * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
    prev_digit = true;
  }
  if (!prev_digit) return std::nullopt;
  if (neg) {
    if (acc > static_cast<uint64_t>(INT64_MAX) + 1) return std::nullopt;
    return static_cast<int64_t>(0 - acc);
  }
  if (acc > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
  return static_cast<int64_t>(acc);
}

std::optional<double> py_parse_float(std::string_view s) {
  s = py_strip(s, nullptr, true, true);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  auto iequals = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k) {
      if ((a[k] | 0x20) != b[k]) return false;
    }
    return true;
  };
  if (iequals(s, "inf") || iequals(s, "infinity")) {
    return neg ? -HUGE_VAL : HUGE_VAL;
  }
  if (iequals(s, "nan")) return neg ? -std::nan("") : std::nan("");
  // digits [. digits] [e [+-] digits], '_' only between digits, at least one mantissa digit.
  std::string clean;
  bool any_digit = false;
  bool seen_dot = false;
  bool seen_exp = false;
  bool exp_digit = false;
  for (size_t k = 0; k < s.size(); ++k) {
    const char c = s[k];
    if (c >= '0' && c <= '9') {
      clean += c;
      (seen_exp ? exp_digit : any_digit) = true;
    } else if (c == '_') {
      const bool ok = k > 0 && k + 1 < s.size() && s[k - 1] >= '0' && s[k - 1] <= '9' &&
                      s[k + 1] >= '0' && s[k + 1] <= '9';
      if (!ok) return std::nullopt;
    } else if (c == '.' && !seen_dot && !seen_exp) {
      seen_dot = true;
      clean += c;
    } else if ((c == 'e' || c == 'E') && !seen_exp && any_digit) {
      seen_exp = true;
      clean += 'e';
      if (k + 1 < s.size() && (s[k + 1] == '+' || s[k + 1] == '-')) clean += s[++k];
    } else {
      return std::nullopt;
    }
  }
  if (!any_digit || (seen_exp && !exp_digit)) return std::nullopt;
  double v = 0;
  const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (res.ec == std::errc::result_out_of_range) {
    // Overflow gives inf in Python; underflow gives 0.
    const size_t e = clean.find('e');
    const bool big = e != std::string::npos && clean[e + 1] != '-';
    v = big ? HUGE_VAL : 0.0;
  } else if (res.ec != std::errc() || res.ptr != clean.data() + clean.size()) {
    return std::nullopt;
  }
  return neg ? -v : v;
}

}  // namespace pagoda::jinja
