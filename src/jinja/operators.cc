// Python's arithmetic operators and `in` on Jinja values, with Python's results for mixed
// int/float, floor division and modulo of negatives, and sequence repetition. 64-bit integer
// overflow is reported as unsupported rather than wrapping.
#include <cmath>

#include "jinja/interpreter.h"

namespace pagoda::jinja {

namespace {

[[noreturn]] void overflow() {
  fail_kind(ErrorKind::kUnsupported, "integer overflow (values beyond 64 bits are unsupported)");
}

int64_t int_floordiv(int64_t a, int64_t b) {
  if (b == 0) fail("integer division or modulo by zero");
  if (a == INT64_MIN && b == -1) overflow();
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t int_mod(int64_t a, int64_t b) {
  if (b == 0) fail("integer modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

double float_mod(double vx, double wx) {
  if (wx == 0.0) fail("float modulo");
  double mod = std::fmod(vx, wx);
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) mod += wx;
  } else {
    mod = std::copysign(0.0, wx);
  }
  return mod;
}

double float_floordiv(double vx, double wx) {
  if (wx == 0.0) fail("float floor division by zero");
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0 && ((wx < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, vx / wx);
  double floordiv = std::floor(div);
  if (div - floordiv > 0.5) floordiv += 1.0;
  return floordiv;
}

Value int_pow(int64_t base, int64_t exp) {
  if (exp < 0) {
    if (base == 0) fail("0.0 cannot be raised to a negative power");
    return Value::number(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  int64_t result = 1;
  int64_t b = base;
  while (exp > 0) {
    if (exp & 1) {
      if (__builtin_mul_overflow(result, b, &result)) overflow();
    }
    exp >>= 1;
    if (exp > 0 && __builtin_mul_overflow(b, b, &b)) overflow();
  }
  return Value::integer(result);
}

Value number_op(std::string_view op, const Value& a, const Value& b) {
  const bool ints = a.is_integral() && b.is_integral();
  if (ints) {
    const int64_t x = a.get_int();
    const int64_t y = b.get_int();
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(x, y, &r)) overflow();
      return Value::integer(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(x, y, &r)) overflow();
      return Value::integer(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(x, y, &r)) overflow();
      return Value::integer(r);
    }
    if (op == "//") return Value::integer(int_floordiv(x, y));
    if (op == "%") return Value::integer(int_mod(x, y));
    if (op == "**") return int_pow(x, y);
  }
  const double x = a.get_float();
  const double y = b.get_float();
  if (op == "+") return Value::number(x + y);
  if (op == "-") return Value::number(x - y);
  if (op == "*") return Value::number(x * y);
  if (op == "/") {
    if (y == 0.0) fail("division by zero");
    return Value::number(x / y);
  }
  if (op == "//") return Value::number(float_floordiv(x, y));
  if (op == "%") return Value::number(float_mod(x, y));
  // **
  if (x == 0.0 && y < 0.0) fail("0.0 cannot be raised to a negative power");
  if (x < 0.0 && std::floor(y) != y && std::isfinite(y)) {
    fail_kind(ErrorKind::kUnsupported, "complex results of ** are not supported");
  }
  const double r = std::pow(x, y);
  if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) {
    fail("(34, 'Numerical result out of range')");
  }
  return Value::number(r);
}

Value repeat(Interp& in, const Value& seq, int64_t times) {
  if (times < 0) times = 0;
  const auto n = static_cast<size_t>(times);
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && n > (SIZE_MAX / s.size())) in.check_string(SIZE_MAX);
    in.check_string(s.size() * n);
    std::string out;
    out.reserve(s.size() * n);
    for (size_t k = 0; k < n; ++k)
      out += s;
    return seq.same_flavour(std::move(out));
  }
  const auto& items = seq.list().items;
  if (!items.empty() && n > (SIZE_MAX / items.size())) in.check_items(SIZE_MAX);
  in.check_items(items.size() * n);
  std::vector<Value> out;
  out.reserve(items.size() * n);
  for (size_t k = 0; k < n; ++k)
    out.insert(out.end(), items.begin(), items.end());
  return make_list(std::move(out), seq.list().kind);
}

bool is_sequence_list(const Value& v) {
  return v.is_list() && (v.list().kind == ListKind::kList || v.list().kind == ListKind::kTuple);
}

}  // namespace

Value binary_op(Interp& in, std::string_view op, const Value& a, const Value& b) {
  // str % Undefined formats (an Undefined passes for a mapping); every other operator on an
  // Undefined raises its message.
  if (op == "%" && a.is_string() && b.is_undefined()) return percent_format(in, a, b);
  if (a.is_undefined()) fail("{}", a.undefined_message());
  if (b.is_undefined()) fail("{}", b.undefined_message());
  if (a.is_number() && b.is_number()) return number_op(op, a, b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() || b.is_markup()) {
        // Markup.__add__ / __radd__ escape the plain side.
        const std::string x = markup_escape(a).str();
        const std::string y = markup_escape(b).str();
        in.check_string(x.size() + y.size());
        return Value::markup(x + y);
      }
      in.check_string(a.str().size() + b.str().size());
      return Value::string(a.str() + b.str());
    }
    if (is_sequence_list(a) && is_sequence_list(b) && a.list().kind == b.list().kind) {
      const auto& x = a.list().items;
      const auto& y = b.list().items;
      in.check_items(x.size() + y.size());
      std::vector<Value> out;
      out.reserve(x.size() + y.size());
      out.insert(out.end(), x.begin(), x.end());
      out.insert(out.end(), y.begin(), y.end());
      return make_list(std::move(out), a.list().kind);
    }
    if (a.is_markup()) {
      // Markup.__add__ returns NotImplemented for non-strings.
      fail("unsupported operand type(s) for +: 'Markup' and '{}'", b.type_name());
    }
    if (a.is_string() || is_sequence_list(a)) {
      fail("can only concatenate {} (not \"{}\") to {}", a.type_name(), b.type_name(),
           a.type_name());
    }
  } else if (op == "*") {
    if ((a.is_string() || is_sequence_list(a)) && b.is_integral())
      return repeat(in, a, b.get_int());
    if ((b.is_string() || is_sequence_list(b)) && a.is_integral())
      return repeat(in, b, a.get_int());
    if (a.is_string() || is_sequence_list(a) || b.is_string() || is_sequence_list(b)) {
      fail("can't multiply sequence by non-int of type '{}'",
           (a.is_string() || is_sequence_list(a)) ? b.type_name() : a.type_name());
    }
  } else if (op == "%" && a.is_string()) {
    return percent_format(in, a, b);
  }
  fail("unsupported operand type(s) for {}: '{}' and '{}'", op == "**" ? "** or pow()" : op,
       a.type_name(), b.type_name());
}

bool contains(Interp& in, const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::kUndefined:
      return false;
    case Kind::kString:
      if (!item.is_string()) {
        fail("'in <string>' requires string as left operand, not {}", item.type_name());
      }
      return container.str().find(item.str()) != std::string::npos;
    case Kind::kList:
      for (const Value& v : in.iterate(container)) {
        if (py_equal(v, item)) return true;
      }
      return false;
    case Kind::kDict:
      require_hashable(item);
      return container.dict().find(item) != nullptr;
    case Kind::kObject:
      if (auto items = container.object().items(in)) {
        for (const Value& v : *items) {
          if (py_equal(v, item)) return true;
        }
        return false;
      }
      break;
    default:
      break;
  }
  fail("argument of type '{}' is not iterable", container.type_name());
}

}  // namespace pagoda::jinja
