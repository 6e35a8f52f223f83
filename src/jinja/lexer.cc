// Lexer for Jinja2 templates with trim_blocks + lstrip_blocks (see lexer.h). The structure
// mirrors jinja2.lexer.Lexer.tokeniter: a root state that cuts data at the next tag start,
// and tag states that emit expression tokens until their end delimiter.
#include "jinja/lexer.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "jinja/error.h"
#include "jinja/py_text.h"

namespace pagoda::jinja {

namespace {

[[noreturn]] void syntax_error(int line, std::string message) {
  throw TemplateError{ErrorKind::kSyntax, std::move(message), line};
}

// Newlines to "\n", then drop one trailing newline (keep_trailing_newline=False).
std::string normalize(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

int count_newlines(std::string_view s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

// Length of the run of Python whitespace (\s) starting at pos.
size_t whitespace_run(std::string_view s, size_t pos) {
  size_t i = pos;
  while (i < s.size()) {
    size_t next = i;
    if (!py_isspace(decode_utf8(s, next))) break;
    i = next;
  }
  return i - pos;
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// (\d+_)*\d+ at pos; returns the length matched (0 if none).
size_t match_digits(std::string_view s, size_t pos) {
  size_t i = pos;
  if (i >= s.size() || !is_digit(s[i])) return 0;
  while (i < s.size() && is_digit(s[i]))
    ++i;
  while (i + 1 < s.size() && s[i] == '_' && is_digit(s[i + 1])) {
    ++i;
    while (i < s.size() && is_digit(s[i]))
      ++i;
  }
  return i - pos;
}

// jinja2 float_re; returns the length matched (0 if none).
size_t match_float(std::string_view s, size_t pos) {
  if (pos > 0 && s[pos - 1] == '.') return 0;
  const size_t int_len = match_digits(s, pos);
  if (int_len == 0) return 0;
  size_t i = pos + int_len;
  auto exponent = [&](size_t at) -> size_t {
    if (at >= s.size() || (s[at] != 'e' && s[at] != 'E')) return 0;
    size_t k = at + 1;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    const size_t d = match_digits(s, k);
    return d == 0 ? 0 : k + d - at;
  };
  // Optional fraction then a required exponent; or a required fraction alone.
  size_t frac = 0;
  if (i < s.size() && s[i] == '.') {
    const size_t d = match_digits(s, i + 1);
    if (d > 0) frac = d + 1;
  }
  if (const size_t e = exponent(i + frac); e > 0) return int_len + frac + e;
  if (frac > 0) return int_len + frac;
  return 0;
}

// jinja2 integer_re; returns the length matched (0 if none) and the base.
size_t match_integer(std::string_view s, size_t pos, int& base) {
  auto run = [&](size_t at, auto valid) {
    // (_?[digit])+
    size_t i = at;
    while (true) {
      size_t k = i;
      if (k < s.size() && s[k] == '_') ++k;
      if (k < s.size() && valid(s[k])) {
        i = k + 1;
      } else {
        break;
      }
    }
    return i - at;
  };
  if (pos + 1 < s.size() && s[pos] == '0') {
    const char p = static_cast<char>(s[pos + 1] | 0x20);
    size_t n = 0;
    if (p == 'b') {
      n = run(pos + 2, [](char c) { return c == '0' || c == '1'; });
      base = 2;
    } else if (p == 'o') {
      n = run(pos + 2, [](char c) { return c >= '0' && c <= '7'; });
      base = 8;
    } else if (p == 'x') {
      n = run(pos + 2,
              [](char c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); });
      base = 16;
    }
    if (n > 0) return n + 2;
  }
  base = 10;
  if (pos >= s.size() || !is_digit(s[pos])) return 0;
  if (s[pos] == '0') return 1 + run(pos + 1, [](char c) { return c == '0'; });
  return 1 + run(pos + 1, is_digit);
}

bool is_name_char(std::string_view s, size_t pos, size_t& next) {
  next = pos;
  const char32_t c = decode_utf8(s, next);
  return c == '_' || (c < 0x80 ? py_isalnum(c) : py_is_word(c));
}

// The Python unicode-escape decoding Jinja applies to string literals.
std::string decode_string(std::string_view body, int line) {
  std::string out;
  out.reserve(body.size());
  auto hex = [&](size_t at, size_t n) -> std::optional<uint32_t> {
    if (at + n > body.size()) return std::nullopt;
    uint32_t v = 0;
    for (size_t k = at; k < at + n; ++k) {
      const char c = body[k];
      uint32_t d = 0;
      if (is_digit(c)) {
        d = static_cast<uint32_t>(c - '0');
      } else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') {
        d = static_cast<uint32_t>((c | 0x20) - 'a' + 10);
      } else {
        return std::nullopt;
      }
      v = v * 16 + d;
    }
    return v;
  };
  for (size_t i = 0; i < body.size();) {
    if (body[i] != '\\') {
      out += body[i++];
      continue;
    }
    const char e = body[i + 1];  // the lexer guarantees a character after '\'
    i += 2;
    switch (e) {
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case '\n':
        break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
        const auto v = hex(i, n);
        if (!v) {
          syntax_error(line, fmt::format("truncated \\{}{} escape", e,
                                         std::string(n, e == 'x' ? 'X' : 'x')));
        }
        if (*v > 0x10FFFF) syntax_error(line, "illegal Unicode character");
        if (*v >= 0xD800 && *v <= 0xDFFF) {
          syntax_error(line, "surrogate code points in string literals are not supported");
        }
        append_utf8(out, *v);
        i += n;
        break;
      }
      case 'N':
        throw TemplateError{ErrorKind::kUnsupported,
                            "\\N{...} escapes in string literals are not supported", line};
      default:
        if (e >= '0' && e <= '7') {
          uint32_t v = static_cast<uint32_t>(e - '0');
          for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k) {
            v = v * 8 + static_cast<uint32_t>(body[i++] - '0');
          }
          append_utf8(out, v);
        } else if (static_cast<unsigned char>(e) >= 0x80) {
          // Python backslash-replaces the non-ASCII character first, so "\é" reads "\xe9".
          size_t at = i - 1;
          const char32_t c = decode_utf8(body, at);
          i = at;
          out += c <= 0xFF     ? fmt::format("\\x{:02x}", static_cast<uint32_t>(c))
                 : c <= 0xFFFF ? fmt::format("\\u{:04x}", static_cast<uint32_t>(c))
                               : fmt::format("\\U{:08x}", static_cast<uint32_t>(c));
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

constexpr std::string_view kOps2[] = {"//", "**", "==", "!=", ">=", "<="};
constexpr std::string_view kOps1 = "+-/*%~[](){}><=.:|,;";

class Lexer {
 public:
  explicit Lexer(std::string src) : s_(std::move(src)) {}

  std::vector<Token> run() {
    try {
      while (pos_ < s_.size())
        root_step();
    } catch (const TemplateError& e) {
      Token t;
      t.type = Tok::kError;
      t.line = e.line;
      t.text = e.message;
      t.error_kind = static_cast<int>(e.kind);
      tokens_.push_back(std::move(t));
    }
    // Jinja's end-of-stream token carries the line of the last token.
    const int last_line = tokens_.empty() ? 1 : tokens_.back().line;
    emit(Tok::kEof, "");
    tokens_.back().line = last_line;
    return std::move(tokens_);
  }

 private:
  void emit(Tok type, std::string text) {
    Token t;
    t.type = type;
    t.line = line_;
    t.text = std::move(text);
    tokens_.push_back(std::move(t));
  }

  bool starts_with(size_t at, std::string_view p) const {
    return at + p.size() <= s_.size() && s_.compare(at, p.size(), p) == 0;
  }

  // Emits the data before a tag with whitespace control applied.
  void emit_data(std::string_view text, char sign, bool lstrip_allowed) {
    const int newlines = count_newlines(text);
    if (sign == '-') {
      text = py_strip(text, nullptr, false, true);
    } else if (sign != '+' && lstrip_allowed) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting_) {
        const std::string_view tail = text.substr(l_pos);
        if (tail.find_first_not_of(" \t") == std::string_view::npos) text = text.substr(0, l_pos);
      }
    }
    if (!text.empty()) emit(Tok::kData, std::string(text));
    line_ += newlines;
  }

  // Consumes `n` bytes as the end of a match, updating line_starting like tokeniter.
  void consume_match_end(size_t end) {
    line_ += count_newlines(std::string_view(s_).substr(pos_, end - pos_));
    line_starting_ = end > 0 && s_[end - 1] == '\n';
    pos_ = end;
  }

  void root_step() {
    size_t k = pos_;
    while (true) {
      k = s_.find('{', k);
      if (k == std::string::npos || k + 1 >= s_.size()) {
        k = std::string::npos;
        break;
      }
      const char c = s_[k + 1];
      if (c == '{' || c == '%' || c == '#') break;
      ++k;
    }
    if (k == std::string::npos) {
      const std::string_view text = std::string_view(s_).substr(pos_);
      emit(Tok::kData, std::string(text));
      line_ += count_newlines(text);
      pos_ = s_.size();
      return;
    }
    const char kind = s_[k + 1];
    char sign = 0;
    if (k + 2 < s_.size() && (s_[k + 2] == '-' || s_[k + 2] == '+')) sign = s_[k + 2];
    const size_t after = k + 2 + (sign ? 1 : 0);
    const std::string_view text = std::string_view(s_).substr(pos_, k - pos_);

    if (kind == '%') {
      if (const size_t raw_end = match_raw_begin(after); raw_end != 0) {
        emit_data(text, sign, true);
        pos_ = k;
        consume_match_end(raw_end);
        lex_raw();
        return;
      }
    }
    emit_data(text, sign, kind != '{');
    line_starting_ = false;
    pos_ = after;
    if (kind == '#') {
      lex_comment();
    } else {
      lex_tag(kind == '%');
    }
  }

  // \s*raw\s*(?:-%}\s*|%}) after "{%" + sign; returns the end offset or 0.
  size_t match_raw_begin(size_t at) const {
    size_t i = at + whitespace_run(s_, at);
    if (!starts_with(i, "raw")) return 0;
    i += 3;
    i += whitespace_run(s_, i);
    if (starts_with(i, "-%}")) return i + 3 + whitespace_run(s_, i + 3);
    if (starts_with(i, "%}")) return i + 2;
    return 0;
  }

  void lex_raw() {
    // (.*?)((?:{%(-|+|))\s*endraw\s*(?:+%}|-%}\s*|%}\n?))
    const int start_line = line_;
    if (pos_ >= s_.size()) return;  // Jinja's failure rule needs a character to match
    for (size_t k = s_.find("{%", pos_); k != std::string::npos; k = s_.find("{%", k + 1)) {
      char sign = 0;
      size_t i = k + 2;
      if (i < s_.size() && (s_[i] == '-' || s_[i] == '+')) sign = s_[i++];
      i += whitespace_run(s_, i);
      if (!starts_with(i, "endraw")) continue;
      i += 6;
      i += whitespace_run(s_, i);
      size_t end = 0;
      if (starts_with(i, "+%}")) {
        end = i + 3;
      } else if (starts_with(i, "-%}")) {
        end = i + 3 + whitespace_run(s_, i + 3);
      } else if (starts_with(i, "%}")) {
        end = i + 2 + (starts_with(i + 2, "\n") ? 1 : 0);
      } else {
        continue;
      }
      emit_data(std::string_view(s_).substr(pos_, k - pos_), sign, true);
      pos_ = k;
      consume_match_end(end);
      return;
    }
    syntax_error(start_line, "Missing end of raw directive");
  }

  void lex_comment() {
    const size_t q = s_.find("#}", pos_);
    if (q == std::string::npos) {
      if (pos_ >= s_.size()) return;  // as for raw: nothing left to fail on
      syntax_error(line_, "Missing end of comment tag");
    }
    size_t end = q + 2;
    if (q > pos_ && s_[q - 1] == '-') {
      end += whitespace_run(s_, end);
    } else if (q > pos_ && s_[q - 1] == '+') {
      // no trimming
    } else if (end < s_.size() && s_[end] == '\n') {
      ++end;
    }
    consume_match_end(end);
  }

  // Expression tokens up to "%}" (block) or "}}" (variable).
  void lex_tag(bool block) {
    emit(block ? Tok::kBlockBegin : Tok::kVarBegin, "");
    std::vector<char> balance;
    while (pos_ < s_.size()) {
      if (balance.empty()) {
        if (block) {
          if (starts_with(pos_, "+%}")) return end_tag(Tok::kBlockEnd, pos_ + 3);
          if (starts_with(pos_, "-%}")) {
            return end_tag(Tok::kBlockEnd, pos_ + 3 + whitespace_run(s_, pos_ + 3));
          }
          if (starts_with(pos_, "%}")) {
            return end_tag(Tok::kBlockEnd, pos_ + 2 + (starts_with(pos_ + 2, "\n") ? 1 : 0));
          }
        } else {
          if (starts_with(pos_, "-}}")) {
            return end_tag(Tok::kVarEnd, pos_ + 3 + whitespace_run(s_, pos_ + 3));
          }
          if (starts_with(pos_, "}}")) return end_tag(Tok::kVarEnd, pos_ + 2);
        }
      }
      if (const size_t ws = whitespace_run(s_, pos_); ws > 0) {
        consume_match_end(pos_ + ws);
        continue;
      }
      if (const size_t n = match_float(s_, pos_); n > 0) {
        std::string digits;
        for (size_t k = pos_; k < pos_ + n; ++k) {
          if (s_[k] != '_') digits += s_[k];
        }
        Token t;
        t.type = Tok::kFloat;
        t.line = line_;
        t.text = s_.substr(pos_, n);
        t.float_value = py_parse_float(digits).value_or(0.0);
        tokens_.push_back(std::move(t));
        consume_match_end(pos_ + n);
        continue;
      }
      int base = 10;
      if (const size_t n = match_integer(s_, pos_, base); n > 0) {
        const std::string text = s_.substr(pos_, n);
        const auto v = py_parse_int(text, 0);
        if (!v) {
          throw TemplateError{ErrorKind::kUnsupported,
                              fmt::format("integer literal {} does not fit in 64 bits", text),
                              line_};
        }
        Token t;
        t.type = Tok::kInt;
        t.line = line_;
        t.text = text;
        t.int_value = *v;
        tokens_.push_back(std::move(t));
        consume_match_end(pos_ + n);
        continue;
      }
      size_t next = 0;
      if (is_name_char(s_, pos_, next)) {
        size_t end = next;
        while (end < s_.size() && is_name_char(s_, end, next))
          end = next;
        emit(Tok::kName, s_.substr(pos_, end - pos_));
        consume_match_end(end);
        continue;
      }
      if (s_[pos_] == '\'' || s_[pos_] == '"') {
        const char q = s_[pos_];
        size_t i = pos_ + 1;
        while (i < s_.size() && s_[i] != q)
          i += (s_[i] == '\\' && i + 1 < s_.size()) ? 2 : 1;
        if (i >= s_.size()) syntax_error(line_, fmt::format("unexpected char '{}' at {}", q, pos_));
        Token t;
        t.type = Tok::kString;
        t.line = line_;
        t.text = decode_string(std::string_view(s_).substr(pos_ + 1, i - pos_ - 1), line_);
        tokens_.push_back(std::move(t));
        consume_match_end(i + 1);
        continue;
      }
      std::string_view op;
      for (std::string_view o : kOps2) {
        if (starts_with(pos_, o)) op = o;
      }
      if (op.empty() && kOps1.find(s_[pos_]) != std::string_view::npos) {
        op = std::string_view(s_).substr(pos_, 1);
      }
      if (op.empty()) {
        size_t at = pos_;
        std::string ch;
        append_utf8(ch, decode_utf8(s_, at));
        syntax_error(line_, fmt::format("unexpected char '{}' at {}", ch, pos_));
      }
      if (op == "(" || op == "[" || op == "{") {
        if (balance.size() >= 256) syntax_error(line_, "brackets nested too deeply");
        balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (balance.empty()) syntax_error(line_, fmt::format("unexpected '{}'", op));
        const char expected = balance.back();
        balance.pop_back();
        if (expected != op[0]) {
          syntax_error(line_, fmt::format("unexpected '{}', expected '{}'", op, expected));
        }
      }
      emit(Tok::kOp, std::string(op));
      consume_match_end(pos_ + op.size());
    }
    // End of input inside a tag: the parser reports the unexpected end of template.
  }

  void end_tag(Tok type, size_t end) {
    emit(type, "");
    consume_match_end(end);
  }

  std::string s_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(normalize(source)).run();
}

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::kData:
      return "template data";
    case Tok::kVarBegin:
      return "begin of print statement";
    case Tok::kVarEnd:
      return "end of print statement";
    case Tok::kBlockBegin:
      return "begin of statement block";
    case Tok::kBlockEnd:
      return "end of statement block";
    case Tok::kEof:
    case Tok::kError:
      return "end of template";
    case Tok::kString:
      return "string";
    case Tok::kInt:
      return "integer";
    case Tok::kFloat:
      return "float";
    case Tok::kName:
    case Tok::kOp:
      return "'" + t.text + "'";
  }
  return "token";
}

}  // namespace pagoda::jinja
