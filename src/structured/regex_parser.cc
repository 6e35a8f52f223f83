#include "structured/regex_parser.h"

#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "tokenizer/utf8.h"

namespace pagoda::structured {

namespace {

namespace utf8 = tokenizer::utf8;

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
bool is_surrogate(uint32_t cp) {
  return cp >= 0xD800 && cp <= 0xDFFF;
}

// The predefined classes, as sorted disjoint ranges.
std::vector<CodePointRange> digit_ranges() {
  return {{'0', '9'}};
}
std::vector<CodePointRange> word_ranges() {
  return {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
}
std::vector<CodePointRange> space_ranges() {  // ECMAScript WhiteSpace + LineTerminator
  return {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
          {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
}
std::vector<CodePointRange> dot_ranges() {  // all but the ECMAScript line terminators
  return {{0x00, 0x09}, {0x0B, 0x0C}, {0x0E, 0x2027}, {0x202A, kMaxCodePoint}};
}

// What one escape or class atom stands for: a single code point or a set (\d, \W, ...).
struct Atom {
  bool is_set = false;
  uint32_t cp = 0;
  std::vector<CodePointRange> ranges;
};

class Parser {
 public:
  explicit Parser(std::string_view pattern) : p_(pattern) {}

  Result<RegexAst> run() {
    for (size_t i = 0; i < p_.size();) {
      const size_t len = utf8::valid_sequence_length(p_, i);
      if (len == 0) return invalid_argument("regex: invalid UTF-8 at offset {}", i);
      i += len;
    }
    if (!p_.empty() && p_[0] == '^') pos_ = 1;  // an anchor at the very start: always true
    PAGODA_ASSIGN_OR_RETURN(int32_t root, parse_alternation());
    if (pos_ < p_.size()) {  // only a ')' stops the top level early
      return invalid_argument("regex: unbalanced ')' at offset {}", pos_);
    }
    ast_.root = root;
    return std::move(ast_);
  }

 private:
  int32_t add(RegexNode node) {
    ast_.nodes.push_back(std::move(node));
    return static_cast<int32_t>(ast_.nodes.size() - 1);
  }
  int32_t add_set(std::vector<CodePointRange> ranges, size_t offset) {
    RegexNode n;
    n.kind = RegexNode::Kind::kSet;
    n.offset = static_cast<uint32_t>(offset);
    n.ranges = std::move(ranges);
    return add(std::move(n));
  }

  // alternation := sequence ('|' sequence)*, up to a ')' or the end.
  Result<int32_t> parse_alternation() {
    const size_t start = pos_;
    std::vector<int32_t> alts;
    while (true) {
      PAGODA_ASSIGN_OR_RETURN(int32_t seq, parse_sequence());
      alts.push_back(seq);
      if (pos_ < p_.size() && p_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (alts.size() == 1) return alts[0];
    RegexNode n;
    n.kind = RegexNode::Kind::kAlt;
    n.offset = static_cast<uint32_t>(start);
    n.children = std::move(alts);
    return add(std::move(n));
  }

  // sequence := (atom quantifier?)*, up to a '|', a ')' or the end.
  Result<int32_t> parse_sequence() {
    const size_t start = pos_;
    std::vector<int32_t> items;
    while (pos_ < p_.size()) {
      const char c = p_[pos_];
      if (c == '|' || c == ')') break;
      if (c == '$' && pos_ + 1 == p_.size() && depth_ == 0) {  // an anchor at the very end
        ++pos_;
        break;
      }
      PAGODA_ASSIGN_OR_RETURN(std::optional<Quantifier> q, parse_quantifier());
      if (q)
        return invalid_argument("regex: quantifier at offset {} has nothing to repeat", q->offset);
      PAGODA_ASSIGN_OR_RETURN(int32_t atom, parse_atom());
      PAGODA_ASSIGN_OR_RETURN(q, parse_quantifier());
      if (q) {
        if (pos_ < p_.size() && p_[pos_] == '?') {
          ++pos_;  // lazy: the same language under full-match semantics
        } else if (pos_ < p_.size() && p_[pos_] == '+') {
          return invalid_argument("regex: possessive quantifier at offset {} is not supported",
                                  pos_);
        }
        PAGODA_ASSIGN_OR_RETURN(std::optional<Quantifier> again, parse_quantifier());
        if (again) {
          return invalid_argument("regex: quantifier at offset {} follows another quantifier",
                                  again->offset);
        }
        RegexNode n;
        n.kind = RegexNode::Kind::kRepeat;
        n.offset = static_cast<uint32_t>(q->offset);
        n.min = q->min;
        n.max = q->max;
        n.children = {atom};
        atom = add(std::move(n));
      }
      items.push_back(atom);
    }
    if (items.size() == 1) return items[0];
    RegexNode n;
    n.kind = items.empty() ? RegexNode::Kind::kEmpty : RegexNode::Kind::kConcat;
    n.offset = static_cast<uint32_t>(start);
    n.children = std::move(items);
    return add(std::move(n));
  }

  struct Quantifier {
    size_t offset = 0;
    int32_t min = 0, max = 0;  // max < 0: unbounded
  };

  // A quantifier at pos_ (consumed), nullopt if there is none. A '{' that does not start
  // `{n}`, `{n,}` or `{n,m}` is not a quantifier (it is a literal, as in PCRE and ECMAScript's
  // Annex B), except `{,m}`, which engines read differently and is refused.
  Result<std::optional<Quantifier>> parse_quantifier() {
    if (pos_ >= p_.size()) return std::optional<Quantifier>();
    const size_t at = pos_;
    switch (p_[pos_]) {
      case '*':
        ++pos_;
        return std::optional<Quantifier>(Quantifier{at, 0, -1});
      case '+':
        ++pos_;
        return std::optional<Quantifier>(Quantifier{at, 1, -1});
      case '?':
        ++pos_;
        return std::optional<Quantifier>(Quantifier{at, 0, 1});
      case '{':
        break;
      default:
        return std::optional<Quantifier>();
    }
    size_t i = pos_ + 1;
    if (i < p_.size() && p_[i] == ',') {
      return invalid_argument("regex: quantifier '{{,' at offset {} is ambiguous (write {{0,m}})",
                              at);
    }
    std::optional<int64_t> min = parse_count(i);
    if (!min) return std::optional<Quantifier>();
    int64_t max = *min;
    if (i < p_.size() && p_[i] == ',') {
      ++i;
      if (i < p_.size() && p_[i] == '}') {
        max = -1;
      } else {
        std::optional<int64_t> m = parse_count(i);
        if (!m) return std::optional<Quantifier>();
        max = *m;
      }
    }
    if (i >= p_.size() || p_[i] != '}') return std::optional<Quantifier>();
    const std::string_view text = p_.substr(at, i + 1 - at);
    if (*min > kMaxRegexRepeat || max > kMaxRegexRepeat) {
      return invalid_argument("regex: repetition count in {} at offset {} exceeds {}", text, at,
                              kMaxRegexRepeat);
    }
    if (max >= 0 && *min > max) {
      return invalid_argument("regex: {} at offset {} has min > max", text, at);
    }
    pos_ = i + 1;
    return std::optional<Quantifier>(
        Quantifier{at, static_cast<int32_t>(*min), static_cast<int32_t>(max)});
  }

  // Decimal digits at p_[i] (advancing i); nullopt if none. Saturates far above any limit.
  std::optional<int64_t> parse_count(size_t& i) const {
    if (i >= p_.size() || !is_digit(p_[i])) return std::nullopt;
    int64_t v = 0;
    for (; i < p_.size() && is_digit(p_[i]); ++i) {
      if (v <= kMaxRegexRepeat) v = v * 10 + (p_[i] - '0');
    }
    return v;
  }

  Result<int32_t> parse_atom() {
    const size_t at = pos_;
    const char c = p_[pos_];
    switch (c) {
      case '(':
        return parse_group();
      case '[':
        return parse_class();
      case '.':
        ++pos_;
        return add_set(dot_ranges(), at);
      case '^':
        return invalid_argument(
            "regex: anchor '^' at offset {} is not supported (only at the "
            "very start)",
            at);
      case '$':
        return invalid_argument(
            "regex: anchor '$' at offset {} is not supported (only at the "
            "very end)",
            at);
      case '\\': {
        PAGODA_ASSIGN_OR_RETURN(Atom a, parse_escape(/*in_class=*/false));
        if (a.is_set) return add_set(std::move(a.ranges), at);
        return add_set({{a.cp, a.cp}}, at);
      }
      default: {
        const uint32_t cp = next_code_point();
        return add_set({{cp, cp}}, at);
      }
    }
  }

  // Decodes and consumes the code point at pos_ (the pattern is valid UTF-8).
  uint32_t next_code_point() {
    const size_t len = utf8::valid_sequence_length(p_, pos_);
    const uint32_t cp = utf8::decode(p_, pos_, len);
    pos_ += len;
    return cp;
  }

  Result<int32_t> parse_group() {
    const size_t open = pos_;
    ++pos_;
    if (pos_ < p_.size() && p_[pos_] == '?') {
      PAGODA_RETURN_IF_ERROR(parse_group_prefix(open));
    }
    if (depth_ >= kMaxRegexNesting) {
      return invalid_argument("regex: group at offset {} is nested deeper than {}", open,
                              kMaxRegexNesting);
    }
    ++depth_;
    PAGODA_ASSIGN_OR_RETURN(int32_t inner, parse_alternation());
    --depth_;
    if (pos_ >= p_.size() || p_[pos_] != ')') {
      return invalid_argument("regex: unbalanced '(' at offset {}", open);
    }
    ++pos_;
    return inner;
  }

  // After "(?": accepts "(?:", "(?<name>" and "(?P<name>" (consumed); refuses the rest.
  Status parse_group_prefix(size_t open) {
    const std::string_view rest = p_.substr(pos_ + 1);
    auto refuse = [open](std::string_view what) {
      return invalid_argument("regex: {} at offset {} is not supported", what, open);
    };
    if (rest.starts_with(":")) {
      pos_ += 2;
      return Status();
    }
    if (rest.starts_with("=")) return refuse("lookahead '(?='");
    if (rest.starts_with("!")) return refuse("negative lookahead '(?!'");
    if (rest.starts_with("<=")) return refuse("lookbehind '(?<='");
    if (rest.starts_with("<!")) return refuse("negative lookbehind '(?<!'");
    if (rest.starts_with(">")) return refuse("atomic group '(?>'");
    if (rest.starts_with("P=")) return refuse("named backreference '(?P='");
    if (rest.starts_with("P>") || rest.starts_with("&") || rest.starts_with("R") ||
        (!rest.empty() && (is_digit(rest[0]) || rest[0] == '+'))) {
      return refuse("recursion '(?R'");
    }
    if (rest.starts_with("#")) return refuse("comment group '(?#'");
    if (rest.starts_with("(")) return refuse("conditional group '(?('");
    if (rest.starts_with("|")) return refuse("branch reset group '(?|'");
    size_t name_at = 0;
    if (rest.starts_with("<")) name_at = 1;
    if (rest.starts_with("P<")) name_at = 2;
    if (name_at > 0) {
      size_t i = name_at;
      if (i < rest.size() && (is_alpha(rest[i]) || rest[i] == '_')) {
        while (i < rest.size() && (is_alpha(rest[i]) || is_digit(rest[i]) || rest[i] == '_'))
          ++i;
        if (i < rest.size() && rest[i] == '>') {
          pos_ += 1 + i + 1;
          return Status();
        }
      }
      return invalid_argument("regex: bad group name at offset {}", open);
    }
    if (!rest.empty() && (is_alpha(rest[0]) || rest[0] == '-' || rest[0] == '^')) {
      return refuse("inline flag group '(?flags'");
    }
    return refuse("group syntax '(?'");
  }

  // A backslash escape at pos_ (consumed). Outside a class \b is a word boundary (refused);
  // inside it is backspace.
  Result<Atom> parse_escape(bool in_class) {
    const size_t at = pos_;
    ++pos_;
    if (pos_ >= p_.size()) return invalid_argument("regex: trailing '\\' at offset {}", at);
    const char c = p_[pos_];
    Atom a;
    auto single = [&a](uint32_t cp) {
      a.cp = cp;
      return std::move(a);
    };
    auto set = [&a](std::vector<CodePointRange> r, bool negate) {
      a.is_set = true;
      a.ranges = negate ? complement_ranges(r) : std::move(r);
      return std::move(a);
    };
    auto refuse = [at](std::string_view what) {
      return invalid_argument("regex: {} at offset {} is not supported", what, at);
    };
    if (static_cast<unsigned char>(c) >= 0x80) {
      return invalid_argument("regex: bad escape at offset {}", at);
    }
    ++pos_;
    switch (c) {
      case 'd':
        return set(digit_ranges(), false);
      case 'D':
        return set(digit_ranges(), true);
      case 'w':
        return set(word_ranges(), false);
      case 'W':
        return set(word_ranges(), true);
      case 's':
        return set(space_ranges(), false);
      case 'S':
        return set(space_ranges(), true);
      case 'n':
        return single('\n');
      case 'r':
        return single('\r');
      case 't':
        return single('\t');
      case 'f':
        return single('\f');
      case 'v':
        return single('\v');
      case '0':
        if (pos_ < p_.size() && is_digit(p_[pos_])) return refuse("octal escape '\\0n'");
        return single(0);
      case 'b':
        if (in_class) return single('\b');
        return refuse("word boundary '\\b'");
      case 'B':
        return refuse("word boundary '\\B'");
      case 'k':
        return refuse("named backreference '\\k'");
      case 'x': {
        if (pos_ < p_.size() && p_[pos_] == '{') return parse_braced_hex(at);
        PAGODA_ASSIGN_OR_RETURN(uint32_t v, parse_hex_digits(at, 2));
        return single(v);
      }
      case 'u': {
        if (pos_ < p_.size() && p_[pos_] == '{') return parse_braced_hex(at);
        PAGODA_ASSIGN_OR_RETURN(uint32_t v, parse_hex_digits(at, 4));
        if (v >= 0xD800 && v <= 0xDBFF && p_.substr(pos_).starts_with("\\u")) {
          // A surrogate pair written as two escapes (JSON style) is one code point.
          const size_t save = pos_;
          pos_ += 2;
          Result<uint32_t> low = parse_hex_digits(pos_ - 2, 4);
          if (low.ok() && *low >= 0xDC00 && *low <= 0xDFFF) {
            return single(0x10000 + ((v - 0xD800) << 10) + (*low - 0xDC00));
          }
          pos_ = save;
        }
        if (is_surrogate(v)) {
          return invalid_argument("regex: lone surrogate in escape at offset {}", at);
        }
        return single(v);
      }
      case 'c':
        if (pos_ < p_.size() && is_alpha(p_[pos_])) return single(p_[pos_++] % 32u);
        return invalid_argument("regex: bad escape '\\c' at offset {}", at);
      case 'p':
      case 'P':
        return refuse("Unicode property escape '\\p'");
      case 'A':
      case 'z':
      case 'Z':
      case 'G':
        return refuse(fmt::format("anchor '\\{}'", c));
      default:
        break;
    }
    if (is_digit(c)) return refuse("backreference '\\1'");
    if (is_alpha(c) || static_cast<unsigned char>(c) < 0x20 || c == 0x7F) {
      return invalid_argument(
          "regex: bad escape '\\{}' at offset {}",
          static_cast<unsigned char>(c) < 0x20 ? std::string("?") : std::string(1, c), at);
    }
    return single(static_cast<uint8_t>(c));  // '\' + ASCII punctuation or space: itself
  }

  // Exactly `n` hex digits at pos_ (consumed).
  Result<uint32_t> parse_hex_digits(size_t at, int n) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const int h = pos_ < p_.size() ? hex_value(p_[pos_]) : -1;
      if (h < 0) return invalid_argument("regex: bad hex escape at offset {}", at);
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    return v;
  }

  // "{H...}" at pos_ (consumed): 1-6 hex digits, a scalar value.
  Result<Atom> parse_braced_hex(size_t at) {
    ++pos_;
    uint32_t v = 0;
    int digits = 0;
    while (pos_ < p_.size() && hex_value(p_[pos_]) >= 0) {
      if (++digits > 6) break;
      v = v * 16 + static_cast<uint32_t>(hex_value(p_[pos_]));
      ++pos_;
    }
    if (digits == 0 || digits > 6 || pos_ >= p_.size() || p_[pos_] != '}') {
      return invalid_argument("regex: bad hex escape at offset {}", at);
    }
    ++pos_;
    if (v > kMaxCodePoint)
      return invalid_argument("regex: escape at offset {} is above U+10FFFF", at);
    if (is_surrogate(v))
      return invalid_argument("regex: lone surrogate in escape at offset {}", at);
    Atom a;
    a.cp = v;
    return a;
  }

  // One class member at pos_ (consumed): a code point or a set escape.
  Result<Atom> parse_class_atom() {
    if (p_[pos_] == '\\') return parse_escape(/*in_class=*/true);
    if (p_[pos_] == '[' && pos_ + 1 < p_.size() &&
        (p_[pos_ + 1] == ':' || p_[pos_ + 1] == '=' || p_[pos_ + 1] == '.')) {
      // [[:alpha:]] is a POSIX class in PCRE but the members '[', ':', 'a', ... in ECMAScript:
      // refused rather than guessed.
      const char kind = p_[pos_ + 1];
      size_t i = pos_ + 2;
      while (i < p_.size() && is_alpha(p_[i]))
        ++i;
      if (i > pos_ + 2 && i + 1 < p_.size() && p_[i] == kind && p_[i + 1] == ']') {
        return invalid_argument("regex: POSIX class '[{}' at offset {} is not supported", kind,
                                pos_);
      }
    }
    Atom a;
    a.cp = next_code_point();
    return a;
  }

  // '[' ... ']' at pos_. "[]" matches nothing and "[^]" any code point (ECMAScript).
  Result<int32_t> parse_class() {
    const size_t open = pos_;
    ++pos_;
    bool negate = false;
    if (pos_ < p_.size() && p_[pos_] == '^') {
      negate = true;
      ++pos_;
    }
    std::vector<CodePointRange> ranges;
    while (true) {
      if (pos_ >= p_.size()) return invalid_argument("regex: unbalanced '[' at offset {}", open);
      if (p_[pos_] == ']') {
        ++pos_;
        break;
      }
      const size_t item_at = pos_;
      PAGODA_ASSIGN_OR_RETURN(Atom lo, parse_class_atom());
      const bool is_range = pos_ + 1 < p_.size() && p_[pos_] == '-' && p_[pos_ + 1] != ']';
      if (!is_range) {
        if (lo.is_set) {
          ranges.insert(ranges.end(), lo.ranges.begin(), lo.ranges.end());
        } else {
          ranges.push_back({lo.cp, lo.cp});
        }
        continue;
      }
      ++pos_;  // '-'
      PAGODA_ASSIGN_OR_RETURN(Atom hi, parse_class_atom());
      if (lo.is_set || hi.is_set) {
        return invalid_argument("regex: class escape as a range end at offset {}", item_at);
      }
      if (lo.cp > hi.cp) {
        return invalid_argument("regex: class range out of order at offset {}", item_at);
      }
      ranges.push_back({lo.cp, hi.cp});
    }
    normalize_ranges(ranges);
    if (negate) ranges = complement_ranges(ranges);
    return add_set(std::move(ranges), open);
  }

  std::string_view p_;
  size_t pos_ = 0;
  int depth_ = 0;
  RegexAst ast_;
};

}  // namespace

Result<RegexAst> parse_regex(std::string_view pattern) {
  return Parser(pattern).run();
}

}  // namespace pagoda::structured
