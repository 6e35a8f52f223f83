#include "structured/json_schema_strings.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "structured/grammar.h"
#include "tokenizer/utf8.h"

namespace pagoda::structured::json_schema_detail {

// A raw character, a short escape, \uXXXX outside the surrogates, or a high + low surrogate pair.
const std::string_view kJsonCharRegex =
    "(?:[^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt]"
    "|\\\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2})"
    "|\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2})";

const std::string_view kJsonStringRegex =
    "\"(?:[^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\/bfnrt]"
    "|\\\\u(?:[0-9a-cA-Ce-fE-F][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2})"
    "|\\\\u[dD][89abAB][0-9a-fA-F]{2}\\\\u[dD][c-fC-F][0-9a-fA-F]{2})*\"";

namespace {

// One unit of canonical string content (what json_string_text writes).
constexpr std::string_view kCanonicalCharRegex =
    "(?:[^\"\\\\\\x00-\\x1f]|\\\\[\"\\\\bfnrt]|\\\\u00(?:0[0-7bef]|1[0-9a-f]))";

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Decodes one UTF-8 code point at s[i] (advancing i); an invalid byte decodes as itself so a
// malformed input cannot stall the caller (JSON text reaching here is valid UTF-8).
uint32_t decode_utf8(std::string_view s, size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  uint32_t cp = 0;
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 >= 0xC0 && b0 < 0xE0) {
    n = 1;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 < 0xF0) {
    n = 2;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 < 0xF8) {
    n = 3;
    cp = b0 & 0x07;
  } else {
    ++i;
    return b0;
  }
  for (size_t k = 1; k <= n; ++k) {
    if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) {
      ++i;
      return b0;
    }
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  }
  i += n + 1;
  return cp;
}

// The canonical JSON escape of a code point that JSON must escape, else "".
std::string json_escape_of(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      break;
  }
  if (cp < 0x20) return fmt::format("\\u{:04x}", cp);
  return "";
}

bool needs_json_escape(uint32_t cp) {
  return cp == '"' || cp == '\\' || cp < 0x20;
}

// A set of code points as sorted, disjoint, non-adjacent inclusive ranges.
class CodePointSet {
 public:
  void add(uint32_t lo, uint32_t hi) { ranges_.emplace_back(lo, hi); }
  void add(const CodePointSet& other) {
    ranges_.insert(ranges_.end(), other.ranges_.begin(), other.ranges_.end());
  }
  void normalize() {
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (const auto& r : ranges_) {
      if (!out.empty() && r.first <= out.back().second + 1) {
        out.back().second = std::max(out.back().second, r.second);
      } else {
        out.push_back(r);
      }
    }
    ranges_ = std::move(out);
  }
  // Precondition: normalized.
  CodePointSet complement() const {
    CodePointSet out;
    uint32_t next = 0;
    for (const auto& r : ranges_) {
      if (r.first > next) out.add(next, r.first - 1);
      next = r.second + 1;
    }
    if (next <= kMaxCodePoint) out.add(next, kMaxCodePoint);
    return out;
  }
  // Precondition: normalized. Removes [lo, hi].
  void remove(uint32_t lo, uint32_t hi) {
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (const auto& r : ranges_) {
      if (r.second < lo || r.first > hi) {
        out.push_back(r);
        continue;
      }
      if (r.first < lo) out.emplace_back(r.first, lo - 1);
      if (r.second > hi) out.emplace_back(hi + 1, r.second);
    }
    ranges_ = std::move(out);
  }
  bool contains(uint32_t cp) const {
    return std::any_of(ranges_.begin(), ranges_.end(),
                       [cp](const auto& r) { return r.first <= cp && cp <= r.second; });
  }
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

CodePointSet digit_set() {
  CodePointSet s;
  s.add('0', '9');
  return s;
}

CodePointSet word_set() {
  CodePointSet s;
  s.add('0', '9');
  s.add('A', 'Z');
  s.add('_', '_');
  s.add('a', 'z');
  s.normalize();
  return s;
}

// ECMAScript \s: WhiteSpace and LineTerminator.
CodePointSet space_set() {
  CodePointSet s;
  s.add(0x09, 0x0D);
  s.add(0x20, 0x20);
  s.add(0xA0, 0xA0);
  s.add(0x1680, 0x1680);
  s.add(0x2000, 0x200A);
  s.add(0x2028, 0x2029);
  s.add(0x202F, 0x202F);
  s.add(0x205F, 0x205F);
  s.add(0x3000, 0x3000);
  s.add(0xFEFF, 0xFEFF);
  s.normalize();
  return s;
}

// ECMAScript `.`: anything but a line terminator.
CodePointSet dot_set() {
  CodePointSet s;
  s.add(0x0A, 0x0A);
  s.add(0x0D, 0x0D);
  s.add(0x2028, 0x2029);
  s.normalize();
  return s.complement();
}

// A code point inside a regex class.
std::string class_char(uint32_t cp) {
  if ((cp >= '0' && cp <= '9') || (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z'))
    return std::string(1, static_cast<char>(cp));
  if (cp < 0x80) return fmt::format("\\x{:02x}", cp);
  return fmt::format("\\u{{{:x}}}", cp);
}

// The regex matching the canonical JSON-escaped text of one code point of `set`; nullopt if no
// code point of the set can appear in a string (the set is empty or only surrogates).
std::optional<std::string> escaped_set_regex(CodePointSet set) {
  set.normalize();
  std::vector<std::string> alternatives;
  CodePointSet raw = set;
  raw.remove(0, 0x1F);
  raw.remove('"', '"');
  raw.remove('\\', '\\');
  raw.remove(0xD800, 0xDFFF);
  if (!raw.empty()) {
    std::string cls = "[";
    for (const auto& [lo, hi] : raw.ranges()) {
      cls += class_char(lo);
      if (hi > lo) cls += "-" + class_char(hi);
    }
    cls += "]";
    alternatives.push_back(std::move(cls));
  }
  for (uint32_t cp = 0; cp <= '\\'; ++cp) {
    if (needs_json_escape(cp) && set.contains(cp))
      alternatives.push_back(regex_escape(json_escape_of(cp)));
  }
  if (alternatives.empty()) return std::nullopt;
  if (alternatives.size() == 1) {
    if (alternatives[0].front() == '[') return alternatives[0];
    return "(?:" + alternatives[0] + ")";
  }
  std::string out = "(?:";
  for (size_t i = 0; i < alternatives.size(); ++i) {
    if (i > 0) out += "|";
    out += alternatives[i];
  }
  return out + ")";
}

// The regex of one literal code point of a pattern, in JSON-escaped form.
std::string literal_regex(uint32_t cp) {
  std::string text;
  if (needs_json_escape(cp)) {
    text = json_escape_of(cp);
    return "(?:" + regex_escape(text) + ")";
  }
  tokenizer::utf8::append(text, cp);
  return regex_escape(text);
}

constexpr int64_t kInfinite = -1;
constexpr int64_t kLengthCap = int64_t{1} << 40;  // lengths saturate here

int64_t mul_length(int64_t a, int64_t b) {
  if (a == kInfinite || b == kInfinite) return (a == 0 || b == 0) ? 0 : kInfinite;
  if (a != 0 && b > kLengthCap / a) return kLengthCap;
  return std::min(a * b, kLengthCap);
}

int64_t add_length(int64_t a, int64_t b) {
  if (a == kInfinite || b == kInfinite) return kInfinite;
  return std::min(a + b, kLengthCap);
}

// Rewrites an ECMA-262 pattern (the subset regex.h knows) into a regex over JSON-escaped string
// content, tracking the decoded length range of what each piece matches.
class PatternTranslator {
 public:
  explicit PatternTranslator(std::string_view pattern) : p_(pattern) {}

  Result<StringContent> translate() {
    std::vector<std::string> alternatives;
    int64_t min_all = -1, max_all = 0;
    const std::string any = "(?:" + std::string(kJsonCharRegex) + ")*";
    while (true) {
      const bool anchored_start = i_ < p_.size() && p_[i_] == '^';
      if (anchored_start) ++i_;
      bool anchored_end = false;
      Piece body;
      PAGODA_RETURN_IF_ERROR(alternative(/*top=*/true, body, anchored_end));
      std::string alt;
      if (!anchored_start) alt += any;
      alt += body.regex;
      if (!anchored_end) alt += any;
      alternatives.push_back(std::move(alt));
      const int64_t alt_max = anchored_start && anchored_end ? body.max : kInfinite;
      min_all = min_all < 0 ? body.min : std::min(min_all, body.min);
      max_all =
          (max_all == kInfinite || alt_max == kInfinite) ? kInfinite : std::max(max_all, alt_max);
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      break;
    }
    if (i_ < p_.size()) return error("unbalanced ')'");
    StringContent out;
    out.regex = "(?:";
    for (size_t a = 0; a < alternatives.size(); ++a) {
      if (a > 0) out.regex += "|";
      out.regex += alternatives[a];
    }
    out.regex += ")";
    out.min_length = min_all;
    if (max_all != kInfinite) out.max_length = max_all;
    return out;
  }

 private:
  struct Piece {
    std::string regex;
    int64_t min = 0;
    int64_t max = 0;  // kInfinite: unbounded
  };

  template <typename... Args>
  Status error(fmt::format_string<Args...> f, Args&&... args) {
    return invalid_argument("{} at offset {}", fmt::format(f, std::forward<Args>(args)...), i_);
  }

  bool at(char c) const { return i_ < p_.size() && p_[i_] == c; }

  // Terms up to '|', ')' or the end. At the top level a '$' before '|' or the end anchors.
  Status alternative(bool top, Piece& out, bool& anchored_end) {
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      if (p_[i_] == '$') {
        if (top && (i_ + 1 == p_.size() || p_[i_ + 1] == '|')) {
          anchored_end = true;
          ++i_;
          return Status();
        }
        return error("anchor '$' inside the pattern is not supported");
      }
      if (p_[i_] == '^') return error("anchor '^' inside the pattern is not supported");
      Piece atom_piece;
      PAGODA_RETURN_IF_ERROR(atom(atom_piece));
      PAGODA_RETURN_IF_ERROR(quantifier(atom_piece));
      out.regex += atom_piece.regex;
      out.min = add_length(out.min, atom_piece.min);
      out.max = add_length(out.max, atom_piece.max);
      if (out.min == kInfinite) out.min = kLengthCap;
    }
    if (top && at(')')) return error("unbalanced ')'");
    return Status();
  }

  Status group(Piece& out) {
    ++i_;  // '('
    if (at('?')) {
      if (i_ + 1 < p_.size() && p_[i_ + 1] == ':') {
        i_ += 2;
      } else if (i_ + 2 < p_.size() && p_[i_ + 1] == '<' && p_[i_ + 2] != '=' &&
                 p_[i_ + 2] != '!') {
        const size_t close = p_.find('>', i_);
        if (close == std::string_view::npos) return error("unterminated group name");
        i_ = close + 1;
      } else {
        return error("lookaround or group flags are not supported");
      }
    }
    if (++depth_ > kMaxDepth) return error("groups nested deeper than {}", kMaxDepth);
    std::vector<Piece> alternatives;
    while (true) {
      Piece alt;
      bool anchored_end = false;
      PAGODA_RETURN_IF_ERROR(alternative(/*top=*/false, alt, anchored_end));
      alternatives.push_back(std::move(alt));
      if (at('|')) {
        ++i_;
        continue;
      }
      break;
    }
    if (!at(')')) return error("unbalanced '('");
    ++i_;
    --depth_;
    out.regex = "(?:";
    out.min = alternatives[0].min;
    out.max = alternatives[0].max;
    for (size_t a = 0; a < alternatives.size(); ++a) {
      if (a > 0) out.regex += "|";
      out.regex += alternatives[a].regex;
      out.min = std::min(out.min, alternatives[a].min);
      out.max = (out.max == kInfinite || alternatives[a].max == kInfinite)
                    ? kInfinite
                    : std::max(out.max, alternatives[a].max);
    }
    out.regex += ")";
    return Status();
  }

  static bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  }

  Status hex_digits(size_t n, uint32_t& cp) {
    if (i_ + n > p_.size()) return error("truncated escape");
    cp = 0;
    for (size_t k = 0; k < n; ++k) {
      const char c = p_[i_ + k];
      if (!is_hex(c)) return error("bad hex digit in escape");
      cp = cp * 16 + static_cast<uint32_t>(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    i_ += n;
    return Status();
  }

  // An escape after '\' (i_ at the character after it). Either a set (class escapes) or a code
  // point. `in_class`: \b is backspace there.
  Status escape(bool in_class, std::optional<CodePointSet>& set, uint32_t& cp) {
    if (i_ >= p_.size()) return error("trailing '\\'");
    const char c = p_[i_];
    auto class_escape = [&](CodePointSet s, bool negate) {
      ++i_;
      s.normalize();
      set = negate ? s.complement() : s;
      return Status();
    };
    switch (c) {
      case 'd':
        return class_escape(digit_set(), false);
      case 'D':
        return class_escape(digit_set(), true);
      case 'w':
        return class_escape(word_set(), false);
      case 'W':
        return class_escape(word_set(), true);
      case 's':
        return class_escape(space_set(), false);
      case 'S':
        return class_escape(space_set(), true);
      case 'n':
        cp = '\n';
        break;
      case 'r':
        cp = '\r';
        break;
      case 't':
        cp = '\t';
        break;
      case 'f':
        cp = '\f';
        break;
      case 'v':
        cp = '\v';
        break;
      case 'b':
        if (!in_class) return error("word boundary '\\b' is not supported");
        cp = '\b';
        break;
      case 'B':
        return error("word boundary '\\B' is not supported");
      case '0':
        if (i_ + 1 < p_.size() && p_[i_ + 1] >= '0' && p_[i_ + 1] <= '9')
          return error("octal escape is not supported");
        cp = 0;
        break;
      case 'c':
        if (i_ + 1 < p_.size() && ((p_[i_ + 1] | 0x20) >= 'a' && (p_[i_ + 1] | 0x20) <= 'z')) {
          cp = static_cast<uint32_t>(p_[i_ + 1]) % 32;
          i_ += 2;
          return Status();
        }
        return error("bad '\\c' escape");
      case 'x':
        ++i_;
        return hex_digits(2, cp);
      case 'u': {
        ++i_;
        if (at('{')) {
          const size_t close = p_.find('}', i_);
          if (close == std::string_view::npos || close == i_ + 1 || close - i_ - 1 > 6)
            return error("bad '\\u{{...}}' escape");
          ++i_;
          PAGODA_RETURN_IF_ERROR(hex_digits(close - i_, cp));
          ++i_;
        } else {
          PAGODA_RETURN_IF_ERROR(hex_digits(4, cp));
          if (cp >= 0xD800 && cp <= 0xDBFF && i_ + 6 <= p_.size() && p_[i_] == '\\' &&
              p_[i_ + 1] == 'u') {
            const size_t save = i_;
            i_ += 2;
            uint32_t low = 0;
            if (hex_digits(4, low).ok() && low >= 0xDC00 && low <= 0xDFFF) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else {
              i_ = save;
            }
          }
        }
        if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > kMaxCodePoint)
          return error("escape of a lone surrogate or beyond U+10FFFF");
        return Status();
      }
      case 'p':
      case 'P':
        return error("Unicode property escapes are not supported");
      case 'k':
        return error("named backreferences are not supported");
      default:
        if (c >= '1' && c <= '9') return error("backreferences are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
          return error("unknown escape '\\{}'", c);
        cp = decode_utf8(p_, i_);  // identity escape of punctuation (or any non-ASCII)
        return Status();
    }
    ++i_;
    return Status();
  }

  Status char_class(Piece& out) {
    ++i_;  // '['
    const bool negate = at('^');
    if (negate) ++i_;
    CodePointSet set;
    while (true) {
      if (i_ >= p_.size()) return error("unterminated character class");
      if (p_[i_] == ']') {
        ++i_;
        break;
      }
      std::optional<CodePointSet> item_set;
      uint32_t lo = 0;
      PAGODA_RETURN_IF_ERROR(class_atom(item_set, lo));
      if (item_set) {
        set.add(*item_set);
        continue;
      }
      if (at('-') && i_ + 1 < p_.size() && p_[i_ + 1] != ']') {
        ++i_;
        std::optional<CodePointSet> hi_set;
        uint32_t hi = 0;
        PAGODA_RETURN_IF_ERROR(class_atom(hi_set, hi));
        if (hi_set) return error("class escape as a range bound is not supported");
        if (hi < lo) return error("class range out of order");
        set.add(lo, hi);
      } else {
        set.add(lo, lo);
      }
    }
    set.normalize();
    if (negate) set = set.complement();
    std::optional<std::string> regex = escaped_set_regex(set);
    if (!regex) return error("character class matches nothing");
    out.regex = std::move(*regex);
    out.min = out.max = 1;
    return Status();
  }

  Status class_atom(std::optional<CodePointSet>& set, uint32_t& cp) {
    if (p_[i_] == '\\') {
      ++i_;
      return escape(/*in_class=*/true, set, cp);
    }
    cp = decode_utf8(p_, i_);
    return Status();
  }

  Status atom(Piece& out) {
    const char c = p_[i_];
    if (c == '(') return group(out);
    if (c == '[') return char_class(out);
    if (c == '*' || c == '+' || c == '?') return error("quantifier '{}' without an atom", c);
    out.min = out.max = 1;
    if (c == '.') {
      ++i_;
      out.regex = *escaped_set_regex(dot_set());
      return Status();
    }
    if (c == '{' && looks_like_count()) return error("quantifier without an atom");
    uint32_t cp = 0;
    if (c == '\\') {
      ++i_;
      std::optional<CodePointSet> set;
      PAGODA_RETURN_IF_ERROR(escape(/*in_class=*/false, set, cp));
      if (set) {
        std::optional<std::string> regex = escaped_set_regex(*set);
        if (!regex) return error("class escape matches nothing");
        out.regex = std::move(*regex);
        return Status();
      }
    } else {
      cp = decode_utf8(p_, i_);
    }
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > kMaxCodePoint) return error("invalid code point");
    out.regex = literal_regex(cp);
    return Status();
  }

  // True if p_[i_] = '{' starts {n}, {n,} or {n,m}.
  bool looks_like_count() const {
    size_t j = i_ + 1;
    const size_t digits_start = j;
    while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9')
      ++j;
    if (j == digits_start) return false;
    if (j < p_.size() && p_[j] == '}') return true;
    if (j >= p_.size() || p_[j] != ',') return false;
    ++j;
    while (j < p_.size() && p_[j] >= '0' && p_[j] <= '9')
      ++j;
    return j < p_.size() && p_[j] == '}';
  }

  Status read_count(int64_t& v) {
    v = 0;
    while (at('0') || (i_ < p_.size() && p_[i_] >= '0' && p_[i_] <= '9')) {
      v = v * 10 + (p_[i_] - '0');
      if (v > kMaxCount) return error("count above {} is not supported", kMaxCount);
      ++i_;
    }
    return Status();
  }

  Status quantifier(Piece& piece) {
    if (i_ >= p_.size()) return Status();
    int64_t lo = 0, hi = 0;
    const char c = p_[i_];
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      lo = c == '+' ? 1 : 0;
      hi = c == '?' ? 1 : kInfinite;
    } else if (c == '{' && looks_like_count()) {
      ++i_;
      PAGODA_RETURN_IF_ERROR(read_count(lo));
      hi = lo;
      if (at(',')) {
        ++i_;
        if (at('}')) {
          hi = kInfinite;
        } else {
          PAGODA_RETURN_IF_ERROR(read_count(hi));
          if (hi < lo) return error("count {{{},{}}} has min > max", lo, hi);
        }
      }
      ++i_;  // '}'
    } else {
      return Status();
    }
    if (at('?')) ++i_;  // lazy: the same language
    if (at('*') || at('+') || at('?') || (at('{') && looks_like_count()))
      return error("nested quantifier");
    if (hi == kInfinite) {
      piece.regex += lo == 0 ? "*" : lo == 1 ? "+" : fmt::format("{{{},}}", lo);
    } else if (lo == 0 && hi == 1) {
      piece.regex += "?";
    } else if (lo == hi) {
      piece.regex += fmt::format("{{{}}}", lo);
    } else {
      piece.regex += fmt::format("{{{},{}}}", lo, hi);
    }
    piece.min = mul_length(piece.min, lo);
    piece.max = mul_length(piece.max, hi);
    return Status();
  }

  static constexpr int kMaxDepth = 64;
  static constexpr int64_t kMaxCount = 1000;
  std::string_view p_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

std::string json_string_text(std::string_view value) {
  std::string out = "\"";
  size_t i = 0;
  while (i < value.size()) {
    const size_t start = i;
    const uint32_t cp = decode_utf8(value, i);
    if (needs_json_escape(cp)) {
      out += json_escape_of(cp);
    } else {
      out.append(value.substr(start, i - start));
    }
  }
  out += "\"";
  return out;
}

std::string length_content_regex(int64_t min, std::optional<int64_t> max) {
  if (max && *max == 0) return "";
  std::string out = "(?:" + std::string(kJsonCharRegex) + ")";
  if (!max) {
    out += min == 0 ? "*" : min == 1 ? "+" : fmt::format("{{{},}}", min);
  } else if (min == *max) {
    if (min != 1) out += fmt::format("{{{}}}", min);
  } else {
    out += fmt::format("{{{},{}}}", min, *max);
  }
  return "(?:" + out + ")";
}

Result<StringContent> pattern_content(std::string_view pattern) {
  constexpr size_t kMaxPatternBytes = 16 * 1024;
  if (pattern.size() > kMaxPatternBytes)
    return invalid_argument("{} bytes (limit {})", pattern.size(), kMaxPatternBytes);
  return PatternTranslator(pattern).translate();
}

std::optional<StringContent> format_content(std::string_view format) {
  // Years 0001-9999 (0000 is not a valid date for most validators), days per month, Feb 29 in
  // leap years only.
  static const std::string kYear = "(?:[0-9]{3}[1-9]|[0-9]{2}[1-9]0|[0-9][1-9]00|[1-9]000)";
  static const std::string kLeapYear =
      "(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:0[48]|[2468][048]|[13579][26])00)";
  static const std::string kMonthDay =
      "(?:(?:0[13578]|1[02])\\-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)\\-(?:0[1-9]|[12][0-9]|30)"
      "|02\\-(?:0[1-9]|1[0-9]|2[0-8]))";
  static const std::string kDate =
      "(?:" + kYear + "\\-" + kMonthDay + "|" + kLeapYear + "\\-02\\-29)";
  // RFC 3339 full-time, without leap seconds.
  static const std::string kTime =
      "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?"
      "(?:[Zz]|[+\\-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
  static const std::string kOctet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
  // RFC 3986 URI: scheme ":" hier-part [ "?" query ] [ "#" fragment ], without IP literals.
  static const std::string kUnreservedSub = "A-Za-z0-9\\-._~!$&'()*+,;=";
  static const std::string kPct = "%[0-9A-Fa-f]{2}";
  static const std::string kPchar = "(?:[" + kUnreservedSub + ":@]|" + kPct + ")";
  static const std::string kUri =
      "[A-Za-z][A-Za-z0-9+\\-.]*:(?://(?:(?:[" + kUnreservedSub + ":]|" + kPct + ")*@)?(?:[" +
      kUnreservedSub + "]|" + kPct + ")*(?::[0-9]*)?(?:/" + kPchar + "*)*|/?(?:" + kPchar +
      "+(?:/" + kPchar + "*)*)?)(?:\\?(?:" + kPchar + "|[/?])*)?(?:#(?:" + kPchar + "|[/?])*)?";
  if (format == "date") return StringContent{kDate, 10, 10};
  if (format == "time") return StringContent{"(?:" + kTime + ")", 9, std::nullopt};
  if (format == "date-time")
    return StringContent{"(?:" + kDate + "[Tt]" + kTime + ")", 20, std::nullopt};
  if (format == "uuid") {
    return StringContent{
        "(?:[0-9a-fA-F]{8}\\-[0-9a-fA-F]{4}\\-[0-9a-fA-F]{4}\\-[0-9a-fA-F]{4}\\-[0-9a-fA-F]{12})",
        36, 36};
  }
  if (format == "ipv4") return StringContent{"(?:(?:" + kOctet + "\\.){3}" + kOctet + ")", 7, 15};
  if (format == "email") {
    return StringContent{
        "(?:[A-Za-z0-9_%+\\-]+(?:\\.[A-Za-z0-9_%+\\-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9\\-]*"
        "[A-Za-z0-9])?\\.)+[A-Za-z]{2,})",
        6, std::nullopt};
  }
  if (format == "uri") return StringContent{"(?:" + kUri + ")", 2, std::nullopt};
  if (format == "hostname") {
    // RFC 1123 labels (1-63 letters, digits, '-', not at either end) joined by '.'; the 253-byte
    // total is not enforced.
    return StringContent{
        "(?:[A-Za-z0-9](?:[A-Za-z0-9\\-]{0,61}[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9\\-]{0,61}"
        "[A-Za-z0-9])?)*)",
        1, std::nullopt};
  }
  return std::nullopt;
}

bool is_unenforced_standard_format(std::string_view format) {
  static constexpr std::string_view kFormats[] = {
      "ipv6",         "uri-reference", "iri",          "iri-reference",         "idn-email",
      "idn-hostname", "uri-template",  "json-pointer", "relative-json-pointer", "regex",
      "duration"};
  for (std::string_view f : kFormats) {
    if (format == f) return true;
  }
  return false;
}

namespace {

struct KeyTrie {
  struct Node {
    std::map<std::string, int32_t> children;  // canonical unit → node
    bool terminal = false;
  };
  std::vector<Node> nodes{Node{}};
};

// Every canonical escape unit, for "an escape other than these".
std::vector<std::string> all_escape_units() {
  std::vector<std::string> out;
  for (uint32_t cp = 0; cp <= '\\'; ++cp) {
    if (needs_json_escape(cp)) out.push_back(json_escape_of(cp));
  }
  return out;
}

std::string trie_regex(const KeyTrie& trie, int32_t id) {
  const KeyTrie::Node& node = trie.nodes[static_cast<size_t>(id)];
  std::vector<std::string> alternatives;
  CodePointSet raw_children;
  std::vector<std::string> escape_children;
  for (const auto& [unit, child] : node.children) {
    alternatives.push_back(regex_escape(unit) + trie_regex(trie, child));
    if (unit[0] == '\\') {
      escape_children.push_back(unit);
    } else {
      size_t i = 0;
      const uint32_t cp = decode_utf8(unit, i);
      raw_children.add(cp, cp);
    }
  }
  // A first unit that leaves the trie, then anything.
  std::string other = "(?:[^\"\\\\\\x00-\\x1f";
  raw_children.normalize();
  for (const auto& [lo, hi] : raw_children.ranges()) {
    other += class_char(lo);
    if (hi > lo) other += "-" + class_char(hi);
  }
  other += "]";
  if (escape_children.empty()) {
    other += "|\\\\[\"\\\\bfnrt]|\\\\u00(?:0[0-7bef]|1[0-9a-f])";
  } else {
    for (const std::string& unit : all_escape_units()) {
      if (std::find(escape_children.begin(), escape_children.end(), unit) == escape_children.end())
        other += "|" + regex_escape(unit);
    }
  }
  other += ")" + std::string(kCanonicalCharRegex) + "*";
  alternatives.push_back(std::move(other));
  std::string out = "(?:";
  for (size_t a = 0; a < alternatives.size(); ++a) {
    if (a > 0) out += "|";
    out += alternatives[a];
  }
  out += ")";
  if (!node.terminal) out += "?";
  return out;
}

}  // namespace

std::optional<std::string> key_excluding_regex(const std::vector<std::string>& names) {
  constexpr size_t kMaxNameUnits = 128;  // one regex group per unit: regex.h nests at most 256
  constexpr size_t kMaxTotalBytes = 64 * 1024;
  size_t total = 0;
  KeyTrie trie;
  for (const std::string& name : names) {
    total += name.size();
    if (total > kMaxTotalBytes) return std::nullopt;
    int32_t node = 0;
    size_t i = 0, units = 0;
    while (i < name.size()) {
      if (++units > kMaxNameUnits) return std::nullopt;
      const size_t start = i;
      const uint32_t cp = decode_utf8(name, i);
      std::string unit =
          needs_json_escape(cp) ? json_escape_of(cp) : std::string(name.substr(start, i - start));
      auto it = trie.nodes[static_cast<size_t>(node)].children.find(unit);
      if (it == trie.nodes[static_cast<size_t>(node)].children.end()) {
        const auto next = static_cast<int32_t>(trie.nodes.size());
        trie.nodes[static_cast<size_t>(node)].children.emplace(std::move(unit), next);
        trie.nodes.emplace_back();
        node = next;
      } else {
        node = it->second;
      }
    }
    trie.nodes[static_cast<size_t>(node)].terminal = true;
  }
  return "\"" + trie_regex(trie, 0) + "\"";
}

}  // namespace pagoda::structured::json_schema_detail
