#include "structured/gbnf_parser.h"

#include <algorithm>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "tokenizer/utf8.h"

namespace pagoda::structured {

namespace utf8 = tokenizer::utf8;

namespace {

using Node = GbnfNode;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
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

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<GbnfAst> parse();

 private:
  template <typename... Args>
  Status error_at(size_t offset, fmt::format_string<Args...> f, Args&&... args) const {
    return invalid_argument("gbnf: {}: {}", gbnf_position(text_, offset),
                            fmt::format(f, std::forward<Args>(args)...));
  }
  // The text validated up front has no NUL bytes, so '\0' means the end.
  char peek(size_t k = 0) const { return pos_ + k < text_.size() ? text_[pos_ + k] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }
  // What is at `offset`, for messages: "'x'", "a newline", "the end of the input".
  std::string describe(size_t offset) const;

  Status check_encoding() const;
  void skip_space(bool newline_ok);
  Status parse_rule();
  // Alternatives separated by '|'; `height` returns the height of `out`.
  Status parse_alternates(Node& out, int32_t& height, int32_t depth, bool nested);
  Status parse_sequence(Node& out, int32_t& height, int32_t depth, bool nested);
  Status parse_char(uint32_t& cp);
  Status parse_hex(size_t num_digits, uint32_t& cp);
  Status parse_count(int32_t& value);
  Status parse_braces(int32_t& min, int32_t& max, bool nested);
  int32_t rule_id(std::string_view name, size_t offset);

  std::string_view text_;
  size_t pos_ = 0;
  GbnfAst ast_;
  std::map<std::string, int32_t, std::less<>> name_to_rule_;
};

std::string Parser::describe(size_t offset) const {
  if (offset >= text_.size()) return "the end of the input";
  const char c = text_[offset];
  if (c == '\n' || c == '\r') return "a newline";
  if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
    return fmt::format("byte 0x{:02x}", static_cast<unsigned char>(c));
  const size_t len = utf8::valid_sequence_length(text_, offset);
  return fmt::format("'{}'", text_.substr(offset, len == 0 ? 1 : len));
}

Status Parser::check_encoding() const {
  for (size_t i = 0; i < text_.size();) {
    const auto c = static_cast<unsigned char>(text_[i]);
    if (c == 0) return error_at(i, "NUL byte");
    if (c < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8::valid_sequence_length(text_, i);
    if (len == 0) return error_at(i, "invalid UTF-8 (byte 0x{:02x})", c);
    i += len;
  }
  return Status();
}

void Parser::skip_space(bool newline_ok) {
  while (!at_end()) {
    const char c = text_[pos_];
    if (c == ' ' || c == '\t' || (newline_ok && (c == '\r' || c == '\n'))) {
      ++pos_;
    } else if (c == '#') {
      while (!at_end() && text_[pos_] != '\r' && text_[pos_] != '\n')
        ++pos_;
    } else {
      break;
    }
  }
}

int32_t Parser::rule_id(std::string_view name, size_t offset) {
  auto it = name_to_rule_.find(name);
  if (it != name_to_rule_.end()) return it->second;
  const auto id = static_cast<int32_t>(ast_.rules.size());
  GbnfRule rule;
  rule.name = std::string(name);
  rule.offset = static_cast<uint32_t>(offset);
  ast_.rules.push_back(std::move(rule));
  name_to_rule_.emplace(std::string(name), id);
  return id;
}

Status Parser::parse_hex(size_t num_digits, uint32_t& cp) {
  const size_t start = pos_;  // at the backslash
  uint32_t value = 0;
  for (size_t i = 0; i < num_digits; ++i) {
    const int v = hex_value(peek(2 + i));
    if (v < 0)
      return error_at(start, "escape '\\{}' needs {} hex digits", text_[start + 1], num_digits);
    value = value * 16 + static_cast<uint32_t>(v);  // 8 digits fit in 32 bits
  }
  if (value > 0x10FFFF)
    return error_at(start, "escape '{}' is beyond U+10FFFF", text_.substr(start, 2 + num_digits));
  if (is_surrogate(value))
    return error_at(start, "escape '{}' is a surrogate code point",
                    text_.substr(start, 2 + num_digits));
  pos_ += 2 + num_digits;
  cp = value;
  return Status();
}

Status Parser::parse_char(uint32_t& cp) {
  if (peek() != '\\') {
    const size_t len = utf8::valid_sequence_length(text_, pos_);  // > 0: checked up front
    cp = utf8::decode(text_, pos_, len);
    pos_ += len;
    return Status();
  }
  const char e = peek(1);
  switch (e) {
    case 'x':
      return parse_hex(2, cp);
    case 'u':
      return parse_hex(4, cp);
    case 'U':
      return parse_hex(8, cp);
    case 'n':
      cp = '\n';
      break;
    case 'r':
      cp = '\r';
      break;
    case 't':
      cp = '\t';
      break;
    case '\\':
    case '"':
    case '[':
    case ']':
      cp = static_cast<unsigned char>(e);
      break;
    case '\0':
      return error_at(pos_, "unexpected end of the input after '\\'");
    default:
      return error_at(pos_, "unknown escape '\\' followed by {}", describe(pos_ + 1));
  }
  pos_ += 2;
  return Status();
}

Status Parser::parse_count(int32_t& value) {
  const size_t start = pos_;
  if (!is_digit(peek())) return error_at(pos_, "expected a number, found {}", describe(pos_));
  int64_t v = 0;
  while (is_digit(peek())) {
    if (v <= kMaxGbnfRepetition) v = v * 10 + (peek() - '0');
    ++pos_;
  }
  if (v > kMaxGbnfRepetition) {
    const std::string_view digits = text_.substr(start, pos_ - start);
    return error_at(start, "repetition count {}{} is above the limit of {}", digits.substr(0, 24),
                    digits.size() > 24 ? "..." : "", kMaxGbnfRepetition);
  }
  value = static_cast<int32_t>(v);
  return Status();
}

Status Parser::parse_braces(int32_t& min, int32_t& max, bool nested) {
  const size_t start = pos_;
  ++pos_;  // '{'
  skip_space(nested);
  PAGODA_RETURN_IF_ERROR(parse_count(min));
  skip_space(nested);
  if (peek() == '}') {
    max = min;
  } else if (peek() == ',') {
    ++pos_;
    skip_space(nested);
    max = -1;
    if (is_digit(peek())) {
      PAGODA_RETURN_IF_ERROR(parse_count(max));
      skip_space(nested);
    }
    if (peek() != '}') return error_at(pos_, "expected '}}', found {}", describe(pos_));
  } else {
    return error_at(pos_, "expected ',' or '}}', found {}", describe(pos_));
  }
  ++pos_;
  if (max >= 0 && max < min)
    return error_at(start, "repetition {{{},{}}} has its maximum below its minimum", min, max);
  skip_space(nested);
  return Status();
}

Status Parser::parse_sequence(Node& out, int32_t& height, int32_t depth, bool nested) {
  const size_t start = pos_;
  std::vector<Node> items;
  std::vector<int32_t> heights;
  while (!at_end()) {
    const char c = peek();
    const size_t offset = pos_;
    Node item;
    item.offset = static_cast<uint32_t>(offset);
    int32_t item_height = 1;
    if (c == '"') {
      ++pos_;
      while (peek() != '"') {
        if (at_end()) return error_at(offset, "unterminated string literal");
        uint32_t cp = 0;
        PAGODA_RETURN_IF_ERROR(parse_char(cp));
        utf8::append(item.text, cp);
      }
      ++pos_;
      item.kind = Node::Kind::kLiteral;
    } else if (c == '[') {
      ++pos_;
      item.kind = Node::Kind::kClass;
      if (peek() == '^') {
        item.negated = true;
        ++pos_;
      }
      while (peek() != ']') {
        if (at_end()) return error_at(offset, "unterminated character class");
        const size_t char_offset = pos_;
        GbnfCharRange range;
        PAGODA_RETURN_IF_ERROR(parse_char(range.lo));
        range.hi = range.lo;
        if (peek() == '-' && peek(1) != ']') {
          ++pos_;
          if (at_end()) return error_at(offset, "unterminated character class");
          PAGODA_RETURN_IF_ERROR(parse_char(range.hi));
          if (range.hi < range.lo)
            return error_at(char_offset, "character range U+{:04X}-U+{:04X} is reversed", range.lo,
                            range.hi);
        }
        item.ranges.push_back(range);
      }
      ++pos_;
      if (item.ranges.empty()) return error_at(offset, "empty character class");
    } else if (is_name_char(c)) {
      while (is_name_char(peek()))
        ++pos_;
      item.kind = Node::Kind::kRef;
      item.rule = rule_id(text_.substr(offset, pos_ - offset), offset);
    } else if (c == '(') {
      if (depth + 1 > kMaxGbnfNesting)
        return error_at(offset, "groups nested deeper than {}", kMaxGbnfNesting);
      ++pos_;
      skip_space(true);
      PAGODA_RETURN_IF_ERROR(parse_alternates(item, item_height, depth + 1, true));
      if (peek() != ')')
        return error_at(pos_, "expected ')' to close the group at {}, found {}",
                        gbnf_position(text_, offset), describe(pos_));
      ++pos_;
    } else if (c == '.') {
      ++pos_;
      item.kind = Node::Kind::kAny;
    } else if (c == '*' || c == '+' || c == '?' || c == '{') {
      if (items.empty()) return error_at(offset, "'{}' has nothing before it to repeat", c);
      int32_t min = 0, max = -1;
      if (c == '{') {
        PAGODA_RETURN_IF_ERROR(parse_braces(min, max, nested));
      } else {
        ++pos_;
        skip_space(nested);
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : -1;
      }
      if (heights.back() + depth + 1 > kMaxGbnfNesting)
        return error_at(offset, "groups and repetitions nested deeper than {}", kMaxGbnfNesting);
      Node repeat;
      repeat.kind = Node::Kind::kRepeat;
      repeat.offset = static_cast<uint32_t>(offset);
      repeat.min = min;
      repeat.max = max;
      repeat.children.push_back(std::move(items.back()));
      items.back() = std::move(repeat);
      ++heights.back();
      continue;
    } else if (c == '<') {
      return error_at(offset, "token references ('<...>') are not supported");
    } else if (c == '!') {
      return error_at(offset, "token negation ('!') is not supported");
    } else {
      break;
    }
    skip_space(nested);
    items.push_back(std::move(item));
    heights.push_back(item_height);
  }
  height = 1;
  for (int32_t h : heights)
    height = std::max(height, h + 1);
  if (items.size() == 1) {
    out = std::move(items[0]);
    height = heights[0];
    return Status();
  }
  out = Node();
  out.offset = static_cast<uint32_t>(start);
  if (items.empty()) return Status();  // an empty literal: ""
  out.kind = Node::Kind::kSeq;
  out.children = std::move(items);
  return Status();
}

Status Parser::parse_alternates(Node& out, int32_t& height, int32_t depth, bool nested) {
  const size_t start = pos_;
  std::vector<Node> alternatives(1);
  int32_t h = 0;
  PAGODA_RETURN_IF_ERROR(parse_sequence(alternatives[0], h, depth, nested));
  height = h;
  while (peek() == '|') {
    ++pos_;
    skip_space(true);
    alternatives.emplace_back();
    PAGODA_RETURN_IF_ERROR(parse_sequence(alternatives.back(), h, depth, nested));
    height = std::max(height, h);
  }
  if (alternatives.size() == 1) {
    out = std::move(alternatives[0]);
    return Status();
  }
  ++height;
  out = Node();
  out.kind = Node::Kind::kAlt;
  out.offset = static_cast<uint32_t>(start);
  out.children = std::move(alternatives);
  return Status();
}

Status Parser::parse_rule() {
  const size_t start = pos_;
  while (is_name_char(peek()))
    ++pos_;
  if (pos_ == start) return error_at(pos_, "expected a rule name, found {}", describe(pos_));
  const std::string_view name = text_.substr(start, pos_ - start);
  skip_space(false);
  if (text_.substr(pos_, 3) != "::=")
    return error_at(pos_, "expected '::=' after rule name '{}', found {}", name, describe(pos_));
  pos_ += 3;
  skip_space(true);
  const int32_t id = rule_id(name, start);
  {
    GbnfRule& rule = ast_.rules[static_cast<size_t>(id)];
    if (rule.defined)
      return error_at(start, "rule '{}' is defined twice (first at {})", name,
                      gbnf_position(text_, rule.offset));
    rule.defined = true;
    rule.offset = static_cast<uint32_t>(start);
  }
  Node body;
  int32_t height = 0;
  PAGODA_RETURN_IF_ERROR(parse_alternates(body, height, 0, false));
  ast_.rules[static_cast<size_t>(id)].body = std::move(body);  // after parsing: rules may grow
  if (peek() == '\r') {
    pos_ += peek(1) == '\n' ? 2 : 1;
  } else if (peek() == '\n') {
    ++pos_;
  } else if (!at_end()) {
    return error_at(pos_, "expected a newline or the end after rule '{}', found {}", name,
                    describe(pos_));
  }
  skip_space(true);
  return Status();
}

Result<GbnfAst> Parser::parse() {
  if (text_.size() > kMaxGbnfBytes)
    return invalid_argument("gbnf: the grammar is {} bytes (limit {})", text_.size(),
                            kMaxGbnfBytes);
  PAGODA_RETURN_IF_ERROR(check_encoding());
  skip_space(true);
  while (!at_end())
    PAGODA_RETURN_IF_ERROR(parse_rule());
  // The undefined rule mentioned first in the text.
  const GbnfRule* undefined = nullptr;
  for (const GbnfRule& rule : ast_.rules) {
    if (!rule.defined && (undefined == nullptr || rule.offset < undefined->offset))
      undefined = &rule;
  }
  if (undefined != nullptr)
    return error_at(undefined->offset, "undefined rule '{}'", undefined->name);
  auto root = name_to_rule_.find(std::string_view("root"));
  if (root == name_to_rule_.end()) return invalid_argument("gbnf: missing rule 'root'");
  ast_.root = root->second;
  return std::move(ast_);
}

}  // namespace

std::string gbnf_position(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < offset; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++line;
      col = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++col;  // count code points, not continuation bytes
    }
  }
  return fmt::format("line {} col {}", line, col);
}

Result<GbnfAst> parse_gbnf_ast(std::string_view text) {
  return Parser(text).parse();
}

}  // namespace pagoda::structured
