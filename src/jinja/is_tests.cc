// Jinja's builtin tests, the right-hand side of `x is name` (jinja2/tests.py of Jinja 3.1).
#include "jinja/interpreter.h"
#include "jinja/py_text.h"

namespace pagoda::jinja {

namespace {

// Checks `x is name(args)` against Python's signature test_name(value[, param]) and raises
// Python's TypeError otherwise. `env` counts a leading environment parameter.
void check_arity(Args& args, std::string_view fn, std::string_view param, int env = 0) {
  for (auto it = args.keywords.begin(); it != args.keywords.end();) {
    if (param.empty() || it->first != param) {
      fail("{}() got an unexpected keyword argument '{}'", fn, it->first);
    }
    if (!args.positional.empty()) fail("{}() got multiple values for argument '{}'", fn, param);
    args.positional.push_back(std::move(it->second));
    it = args.keywords.erase(it);
  }
  const size_t expected = param.empty() ? 0 : 1;
  if (args.positional.size() > expected) {
    const size_t takes = expected + 1 + static_cast<size_t>(env);
    fail("{}() takes {} positional argument{} but {} were given", fn, takes, takes == 1 ? "" : "s",
         args.positional.size() + 1 + static_cast<size_t>(env));
  }
  if (args.positional.size() < expected) {
    fail("{}() missing 1 required positional argument: '{}'", fn, param);
  }
}

// operator.eq and friends.
void check_operator(Args& args, std::string_view op) {
  if (!args.keywords.empty()) fail("{}() takes no keyword arguments", op);
  if (args.positional.size() != 1) {
    fail("{} expected 2 arguments, got {}", op, args.positional.size() + 1);
  }
}

bool t_defined(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_defined", "");
  return !v.is_undefined();
}
bool t_undefined(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_undefined", "");
  return v.is_undefined();
}
bool t_none(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_none", "");
  return v.is_none();
}
bool t_boolean(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_boolean", "");
  return v.kind() == Kind::kBool;
}
bool t_false(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_false", "");
  return v.kind() == Kind::kBool && !v.get_bool();
}
bool t_true(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_true", "");
  return v.kind() == Kind::kBool && v.get_bool();
}
bool t_integer(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_integer", "");
  return v.kind() == Kind::kInt;
}
bool t_float(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_float", "");
  return v.kind() == Kind::kFloat;
}
bool t_number(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_number", "");
  return v.is_number();
}
bool t_string(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_string", "");
  return v.is_string();
}
bool t_mapping(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_mapping", "");
  return v.is_dict();
}
bool t_iterable(Interp& in, const Value& v, Args& args) {
  check_arity(args, "test_iterable", "");
  if (v.is_undefined() || v.is_string() || v.is_list() || v.is_dict()) return true;
  if (v.is_object()) return v.object().attributes() == nullptr && v.object().items(in).has_value();
  return false;
}
bool t_sequence(Interp& in, const Value& v, Args& args) {
  check_arity(args, "test_sequence", "");
  if (v.is_undefined() || v.is_string() || v.is_dict()) return true;
  if (v.is_list()) return v.list().kind == ListKind::kList || v.list().kind == ListKind::kTuple;
  if (v.is_object()) return v.object().attributes() == nullptr && v.object().items(in).has_value();
  return false;
}
bool t_callable(Interp&, const Value& v, Args& args) {
  if (!args.keywords.empty()) fail("callable() takes no keyword arguments");
  if (!args.positional.empty()) {
    fail("callable() takes exactly one argument ({} given)", args.positional.size() + 1);
  }
  return v.is_object() && v.object().callable();
}
bool t_sameas(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_sameas", "other");
  const Value& o = args.positional[0];
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
bool t_escaped(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_escaped", "");
  return v.is_markup();
}
bool t_odd(Interp& in, const Value& v, Args& args) {
  check_arity(args, "test_odd", "");
  return py_equal(binary_op(in, "%", v, Value::integer(2)), Value::integer(1));
}
bool t_even(Interp& in, const Value& v, Args& args) {
  check_arity(args, "test_even", "");
  return py_equal(binary_op(in, "%", v, Value::integer(2)), Value::integer(0));
}
bool t_divisibleby(Interp& in, const Value& v, Args& args) {
  check_arity(args, "test_divisibleby", "num");
  return py_equal(binary_op(in, "%", v, args.positional[0]), Value::integer(0));
}
bool t_lower(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_lower", "");
  return py_islower(to_str(v));
}
bool t_upper(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_upper", "");
  return py_isupper(to_str(v));
}
bool t_filter(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_filter", "", 1);
  return v.is_string() && find_filter(v.str()) != nullptr;
}
bool t_test(Interp&, const Value& v, Args& args) {
  check_arity(args, "test_test", "", 1);
  return v.is_string() && find_test(v.str()) != nullptr;
}
bool t_eq(Interp&, const Value& v, Args& args) {
  check_operator(args, "eq");
  return py_equal(v, args.positional[0]);
}
bool t_ne(Interp&, const Value& v, Args& args) {
  check_operator(args, "ne");
  return !py_equal(v, args.positional[0]);
}
bool t_lt(Interp&, const Value& v, Args& args) {
  check_operator(args, "lt");
  return py_compare(v, args.positional[0], "<");
}
bool t_le(Interp&, const Value& v, Args& args) {
  check_operator(args, "le");
  return py_compare(v, args.positional[0], "<=");
}
bool t_gt(Interp&, const Value& v, Args& args) {
  check_operator(args, "gt");
  return py_compare(v, args.positional[0], ">");
}
bool t_ge(Interp&, const Value& v, Args& args) {
  check_operator(args, "ge");
  return py_compare(v, args.positional[0], ">=");
}
bool t_in(Interp& in, const Value& v, Args& args) {
  check_arity(args, "test_in", "seq");
  return contains(in, args.positional[0], v);
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

}  // namespace pagoda::jinja
