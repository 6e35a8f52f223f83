// Python string formatting for templates: printf-style ("%s" % x, the `format` filter) and
// str.format with the common parts of the format-spec mini-language. Rarely used by chat
// templates; anything beyond the implemented subset is reported as unsupported.
#include <cmath>
#include <cstdio>

#include "jinja/interpreter.h"
#include "jinja/py_text.h"

namespace pagoda::jinja {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string c_format(const std::string& spec, auto value) {
  char buf[512];
  const int n = std::snprintf(buf, sizeof(buf), spec.c_str(), value);
  if (n < 0 || static_cast<size_t>(n) >= sizeof(buf)) {
    fail_kind(ErrorKind::kUnsupported, "formatted number too long");
  }
  return std::string(buf, static_cast<size_t>(n));
}

// Pads s to width code points.
std::string align(std::string s, int64_t width, char32_t fill, char how) {
  const auto len = static_cast<int64_t>(count_code_points(s));
  if (width <= len) return s;
  const int64_t marg = width - len;
  const int64_t left = how == '<' ? 0 : how == '^' ? marg / 2 : marg;
  std::string out;
  for (int64_t k = 0; k < left; ++k)
    append_utf8(out, fill);
  out += s;
  for (int64_t k = left; k < marg; ++k)
    append_utf8(out, fill);
  return out;
}

std::string truncate_code_points(const std::string& s, int64_t n) {
  if (n < 0) return s;
  const std::u32string cps = to_code_points(s);
  if (static_cast<int64_t>(cps.size()) <= n) return s;
  return from_code_points(std::u32string_view(cps).substr(0, static_cast<size_t>(n)));
}

}  // namespace

Value percent_format(Interp& in, const Value& format_value, const Value& args) {
  const std::string& format = format_value.str();
  const bool markup = format_value.is_markup();
  std::vector<Value> positional;
  const DictData* mapping = nullptr;
  if (args.is_list() && args.list().kind == ListKind::kTuple) {
    positional = args.list().items;
  } else {
    if (args.is_dict()) mapping = &args.dict();
    positional.push_back(args);
  }
  // Python treats any non-tuple object with __getitem__ (dicts, and Jinja's Undefined) as
  // the mapping for %(key)s and skips the "not all arguments converted" check.
  const bool mapping_like = mapping != nullptr || args.is_undefined();
  size_t next_arg = 0;
  bool used_mapping = false;
  auto take = [&]() -> const Value& {
    if (next_arg >= positional.size()) fail("not enough arguments for format string");
    return positional[next_arg++];
  };
  std::string out;
  for (size_t i = 0; i < format.size();) {
    if (format[i] != '%') {
      out += format[i++];
      continue;
    }
    if (++i >= format.size()) fail("incomplete format");
    if (format[i] == '%') {
      out += '%';
      ++i;
      continue;
    }
    const Value* value = nullptr;
    Value keyed;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string::npos) fail("incomplete format key");
      if (args.is_undefined()) fail("{}", args.undefined_message());
      if (mapping == nullptr) fail("format requires a mapping");
      const Value* v = mapping->find(std::string_view(format).substr(i + 1, close - i - 1));
      if (v == nullptr) fail("'{}'", format.substr(i + 1, close - i - 1));
      keyed = *v;
      value = &keyed;
      used_mapping = true;
      i = close + 1;
    }
    std::string flags;
    while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string::npos) {
      flags += format[i++];
    }
    std::string width;
    while (i < format.size() && is_digit(format[i]))
      width += format[i++];
    std::string precision;
    bool has_precision = false;
    if (i < format.size() && format[i] == '.') {
      has_precision = true;
      ++i;
      while (i < format.size() && is_digit(format[i]))
        precision += format[i++];
    }
    if (width.size() > 4 || precision.size() > 4) {
      fail_kind(ErrorKind::kUnsupported, "format width too large");
    }
    while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L'))
      ++i;
    if (i >= format.size()) fail("incomplete format");
    const char conv = format[i++];
    if (value == nullptr) value = &take();
    const Value& v = *value;
    const std::string spec = "%" + flags + width + (has_precision ? "." + precision : "");
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = conv == 's' ? to_str(v) : to_repr(v);
        if (markup && !v.is_markup()) s = html_escape(s);
        if (has_precision)
          s = truncate_code_points(s, precision.empty() ? 0 : std::stoll(precision));
        const int64_t w = width.empty() ? 0 : std::stoll(width);
        s = align(std::move(s), w, ' ', flags.find('-') != std::string::npos ? '<' : '>');
        out += s;
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        if (v.is_undefined()) fail("{}", v.undefined_message());  // Undefined.__int__
        if (!v.is_number()) {
          fail("%{} format: {} is required, not {}", conv,
               conv == 'x' || conv == 'X' || conv == 'o' ? "an integer" : "a real number",
               v.type_name());
        }
        int64_t n = 0;
        if (v.is_integral()) {
          n = v.get_int();
        } else if (conv == 'x' || conv == 'X' || conv == 'o') {
          fail("%{} format: an integer is required, not float", conv);
        } else {
          const double f = v.get_float();
          if (!std::isfinite(f) || std::fabs(f) >= 9.2e18) {
            fail_kind(ErrorKind::kUnsupported, "integer overflow");
          }
          n = static_cast<int64_t>(f);
        }
        const char c = conv == 'i' || conv == 'u' ? 'd' : conv;
        out += c_format(spec + "ll" + c, static_cast<long long>(n));
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G':
        if (v.is_undefined()) fail("{}", v.undefined_message());  // Undefined.__float__
        if (!v.is_number()) fail("must be real number, not {}", v.type_name());
        out += c_format(spec + conv, v.get_float());
        break;
      case 'c':
        if (v.is_integral()) {
          append_utf8(out, static_cast<char32_t>(v.get_int()));
        } else if (v.is_string() && count_code_points(v.str()) == 1) {
          out += v.str();
        } else {
          fail("%c requires int or char");
        }
        break;
      default:
        fail("unsupported format character '{}' (0x{:x}) at index {}", conv,
             static_cast<unsigned>(static_cast<unsigned char>(conv)), i - 1);
    }
    in.check_string(out.size());
  }
  if (!used_mapping && !mapping_like && next_arg < positional.size()) {
    fail("not all arguments converted during string formatting");
  }
  return markup ? Value::markup(std::move(out)) : Value::string(std::move(out));
}

namespace {

// format(value, spec) for the common subset: [[fill]align][sign][0][width][,][.prec][type].
std::string format_spec(Interp& /*in*/, const Value& v, std::string_view spec) {
  if (spec.empty()) return to_str(v);
  size_t i = 0;
  char32_t fill = ' ';
  char how = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  {
    size_t next = 0;
    const char32_t first = decode_utf8(spec, next);
    if (next < spec.size() && is_align(spec[next])) {
      fill = first;
      how = spec[next];
      i = next + 1;
    } else if (is_align(spec[0])) {
      how = spec[0];
      i = 1;
    }
  }
  char sign = 0;
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
  if (i < spec.size() && spec[i] == '0') {
    if (how == 0) {
      fill = '0';
      how = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < spec.size() && is_digit(spec[i]) && width < 100000)
    width = width * 10 + (spec[i++] - '0');
  int64_t precision = -1;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    precision = 0;
    while (i < spec.size() && is_digit(spec[i]) && precision < 1000) {
      precision = precision * 10 + (spec[i++] - '0');
    }
  }
  char type = 0;
  if (i < spec.size()) type = spec[i++];
  if (i != spec.size() || width >= 100000 || precision >= 1000) {
    fail_kind(ErrorKind::kUnsupported, "format spec '{}' is not supported", spec);
  }
  std::string body;
  bool numeric = false;
  if (v.is_string() && (type == 0 || type == 's')) {
    body = precision >= 0 ? truncate_code_points(v.str(), precision) : v.str();
    if (how == 0) how = '<';
  } else if (v.is_number() && (type == 0 || type == 'd') && v.is_integral() && precision < 0) {
    body = std::to_string(v.get_int());
    numeric = true;
  } else if (v.is_number() &&
             (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == 'g' ||
              type == 'G' || type == '%' || (type == 0 && v.kind() == Kind::kFloat))) {
    double f = v.get_float();
    if (type == 0 && precision < 0) {
      body = py_float_repr(f);
    } else {
      char t = type == 0 ? 'g' : type;
      if (t == '%') f *= 100.0;
      body =
          c_format("%." + std::to_string(precision < 0 ? 6 : precision) + (t == '%' ? 'f' : t), f);
      if (t == '%') body += '%';
    }
    numeric = true;
  } else if (v.is_integral() && (type == 'x' || type == 'X' || type == 'o' || type == 'b')) {
    if (type == 'b') {
      uint64_t n = v.get_int() < 0 ? 0 - static_cast<uint64_t>(v.get_int())
                                   : static_cast<uint64_t>(v.get_int());
      do {
        body.insert(body.begin(), static_cast<char>('0' + (n & 1)));
        n >>= 1;
      } while (n != 0);
      if (v.get_int() < 0) body.insert(body.begin(), '-');
    } else {
      const int64_t n = v.get_int();
      body = (n < 0 ? "-" : "") +
             c_format(std::string("%ll") + type, static_cast<unsigned long long>(n < 0 ? -n : n));
    }
    numeric = true;
  } else {
    fail("Unknown format code '{}' for object of type '{}'", type == 0 ? 's' : type, v.type_name());
  }
  if (numeric) {
    if (body[0] != '-' && (sign == '+' || sign == ' ')) body.insert(body.begin(), sign);
    if (how == 0) how = '>';
    if (how == '=') {
      const bool has_sign = body[0] == '-' || body[0] == '+' || body[0] == ' ';
      const std::string head = has_sign ? body.substr(0, 1) : "";
      std::string digits = align(has_sign ? body.substr(1) : body,
                                 width - static_cast<int64_t>(head.size()), fill, '>');
      return head + digits;
    }
  }
  return align(std::move(body), width, fill, how == '=' ? '>' : how);
}

}  // namespace

Value str_format(Interp& in, const std::string& format, Args& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < format.size();) {
    const char c = format[i];
    if (c == '}') {
      if (i + 1 < format.size() && format[i + 1] == '}') {
        out += '}';
        i += 2;
        continue;
      }
      fail("Single '}}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < format.size() && format[i + 1] == '{') {
      out += '{';
      i += 2;
      continue;
    }
    const size_t close = format.find('}', i);
    if (close == std::string::npos) fail("expected '}}' before end of string");
    std::string_view field = std::string_view(format).substr(i + 1, close - i - 1);
    if (field.find('{') != std::string_view::npos) {
      fail_kind(ErrorKind::kUnsupported, "nested replacement fields are not supported");
    }
    i = close + 1;
    std::string_view spec;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    char conversion = 0;
    if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
      if (bang + 2 != field.size()) fail("expected ':' after conversion specifier");
      conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    size_t name_end = 0;
    while (name_end < field.size() && field[name_end] != '.' && field[name_end] != '[')
      ++name_end;
    const std::string_view name = field.substr(0, name_end);
    Value v;
    if (name.empty() || is_digit(name[0])) {
      size_t idx = auto_index++;
      if (!name.empty()) {
        idx = 0;
        for (char d : name) {
          if (!is_digit(d) || idx > 100000) fail("invalid format field");
          idx = idx * 10 + static_cast<size_t>(d - '0');
        }
      }
      if (idx >= args.positional.size()) {
        fail("Replacement index {} out of range for positional args tuple", idx);
      }
      v = args.positional[idx];
    } else {
      bool found = false;
      for (const auto& [k, val] : args.keywords) {
        if (k == name) {
          v = val;
          found = true;
        }
      }
      if (!found) fail("'{}'", name);
    }
    // .attr and [key] chains
    for (size_t k = name_end; k < field.size();) {
      if (field[k] == '.') {
        size_t e = k + 1;
        while (e < field.size() && field[e] != '.' && field[e] != '[')
          ++e;
        v = in.get_attr(v, field.substr(k + 1, e - k - 1));
        k = e;
      } else {
        const size_t e = field.find(']', k);
        if (e == std::string_view::npos) fail("Missing ']' in format string");
        const std::string_view key = field.substr(k + 1, e - k - 1);
        bool numeric = !key.empty();
        for (char d : key)
          numeric = numeric && is_digit(d);
        v = in.get_item(v, numeric && key.size() < 10 ? Value::integer(std::stoll(std::string(key)))
                                                      : Value::string(std::string(key)));
        k = e + 1;
      }
      if (v.is_undefined()) fail("{}", v.undefined_message());
    }
    if (conversion == 'r' || conversion == 'a') {
      v = Value::string(to_repr(v));
    } else if (conversion == 's') {
      v = Value::string(to_str(v));
    } else if (conversion != 0) {
      fail("Unknown conversion specifier {}", conversion);
    }
    out += format_spec(in, v, spec);
    in.check_string(out.size());
  }
  return Value::string(std::move(out));
}

}  // namespace pagoda::jinja
