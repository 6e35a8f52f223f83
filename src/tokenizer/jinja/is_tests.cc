// Jinja's builtin tests, the right-hand side of `x is name` (jinja2/tests.py of Jinja 3.1).
#include "tokenizer/jinja/interpreter.h"
#include "tokenizer/jinja/py_text.h"

namespace pagoda::tokenizer::jinja {

namespace {

const Value& test_arg(Args& args, std::string_view test) {
  if (args.positional.empty()) fail("{}() missing 1 required positional argument", test);
  return args.positional[0];
}

bool t_defined(Interp&, const Value& v, Args&) {
  return !v.is_undefined();
}
bool t_undefined(Interp&, const Value& v, Args&) {
  return v.is_undefined();
}
bool t_none(Interp&, const Value& v, Args&) {
  return v.is_none();
}
bool t_boolean(Interp&, const Value& v, Args&) {
  return v.kind() == Kind::kBool;
}
bool t_false(Interp&, const Value& v, Args&) {
  return v.kind() == Kind::kBool && !v.get_bool();
}
bool t_true(Interp&, const Value& v, Args&) {
  return v.kind() == Kind::kBool && v.get_bool();
}
bool t_integer(Interp&, const Value& v, Args&) {
  return v.kind() == Kind::kInt;
}
bool t_float(Interp&, const Value& v, Args&) {
  return v.kind() == Kind::kFloat;
}
bool t_number(Interp&, const Value& v, Args&) {
  return v.is_number();
}
bool t_string(Interp&, const Value& v, Args&) {
  return v.is_string();
}
bool t_mapping(Interp&, const Value& v, Args&) {
  return v.is_dict();
}
bool t_iterable(Interp& in, const Value& v, Args&) {
  if (v.is_undefined() || v.is_string() || v.is_list() || v.is_dict()) return true;
  if (v.is_object()) return v.object().attributes() == nullptr && v.object().items(in).has_value();
  return false;
}
bool t_sequence(Interp& in, const Value& v, Args&) {
  if (v.is_undefined() || v.is_string() || v.is_dict()) return true;
  if (v.is_list()) return v.list().kind == ListKind::kList || v.list().kind == ListKind::kTuple;
  if (v.is_object()) return v.object().attributes() == nullptr && v.object().items(in).has_value();
  return false;
}
bool t_callable(Interp&, const Value& v, Args&) {
  return v.is_object() && v.object().callable();
}
bool t_sameas(Interp&, const Value& v, Args& args) {
  const Value& o = test_arg(args, "sameas");
  if (v.kind() != o.kind()) return false;
  switch (v.kind()) {
    case Kind::kNone:
    case Kind::kUndefined:
      return v.is_none() || v.identity() == o.identity();
    case Kind::kBool:
      return v.get_bool() == o.get_bool();
    case Kind::kInt:
      return v.get_int() == o.get_int() && v.get_int() >= -5 && v.get_int() <= 256;
    case Kind::kFloat:
      return false;
    default:
      return v.identity() == o.identity();
  }
}
bool t_escaped(Interp&, const Value& v, Args&) {
  return v.is_markup();
}
bool t_odd(Interp& in, const Value& v, Args&) {
  return py_equal(binary_op(in, "%", v, Value::integer(2)), Value::integer(1));
}
bool t_even(Interp& in, const Value& v, Args&) {
  return py_equal(binary_op(in, "%", v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(Interp& in, const Value& v, Args& args) {
  return py_equal(binary_op(in, "%", v, test_arg(args, "divisibleby")), Value::integer(0));
}
bool t_lower(Interp&, const Value& v, Args&) {
  return py_islower(to_str(v));
}
bool t_upper(Interp&, const Value& v, Args&) {
  return py_isupper(to_str(v));
}
bool t_filter(Interp&, const Value& v, Args&) {
  return v.is_string() && find_filter(v.str()) != nullptr;
}
bool t_test(Interp&, const Value& v, Args&) {
  return v.is_string() && find_test(v.str()) != nullptr;
}
bool t_eq(Interp&, const Value& v, Args& args) {
  return py_equal(v, test_arg(args, "eq"));
}
bool t_ne(Interp&, const Value& v, Args& args) {
  return !py_equal(v, test_arg(args, "ne"));
}
bool t_lt(Interp&, const Value& v, Args& args) {
  return py_compare(v, test_arg(args, "lt"), "<");
}
bool t_le(Interp&, const Value& v, Args& args) {
  return py_compare(v, test_arg(args, "le"), "<=");
}
bool t_gt(Interp&, const Value& v, Args& args) {
  return py_compare(v, test_arg(args, "gt"), ">");
}
bool t_ge(Interp&, const Value& v, Args& args) {
  return py_compare(v, test_arg(args, "ge"), ">=");
}
bool t_in(Interp& in, const Value& v, Args& args) {
  return contains(in, test_arg(args, "in"), v);
}

struct TestEntry {
  std::string_view name;
  TestFn fn;
};

constexpr TestEntry kTests[] = {
    {"!=", t_ne},
    {"<", t_lt},
    {"<=", t_le},
    {"==", t_eq},
    {">", t_gt},
    {">=", t_ge},
    {"boolean", t_boolean},
    {"callable", t_callable},
    {"defined", t_defined},
    {"divisibleby", t_divisibleby},
    {"eq", t_eq},
    {"equalto", t_eq},
    {"escaped", t_escaped},
    {"even", t_even},
    {"false", t_false},
    {"filter", t_filter},
    {"float", t_float},
    {"ge", t_ge},
    {"greaterthan", t_gt},
    {"gt", t_gt},
    {"in", t_in},
    {"integer", t_integer},
    {"iterable", t_iterable},
    {"le", t_le},
    {"lessthan", t_lt},
    {"lower", t_lower},
    {"lt", t_lt},
    {"mapping", t_mapping},
    {"ne", t_ne},
    {"none", t_none},
    {"number", t_number},
    {"odd", t_odd},
    {"sameas", t_sameas},
    {"sequence", t_sequence},
    {"string", t_string},
    {"test", t_test},
    {"true", t_true},
    {"undefined", t_undefined},
    {"upper", t_upper},
};

}  // namespace

TestFn find_test(std::string_view name) {
  for (const auto& t : kTests) {
    if (t.name == name) return t.fn;
  }
  return nullptr;
}

}  // namespace pagoda::tokenizer::jinja
