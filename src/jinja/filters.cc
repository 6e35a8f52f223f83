// Jinja's builtin filters (jinja2/filters.py of Jinja 3.1) plus Hugging Face's tojson
// override. Filters that return generators in Jinja (map, select,
// unique, batch, ...) return ListKind::kGenerator values, which are always truthy and
// single-use, as in Python.
#include <algorithm>
#include <cmath>

#include "jinja/interpreter.h"
#include "jinja/py_text.h"

namespace pagoda::jinja {

namespace {

using Params = std::initializer_list<std::string_view>;

Value generator(Interp& in, std::vector<Value> items) {
  in.check_items(items.size());
  return make_list(std::move(items), ListKind::kGenerator);
}

Value str_value(Interp& in, std::string s) {
  return in.make_string(std::move(s));
}

// Jinja's map/select/unique/batch/slice/items are Python generator functions: their work,
// and so their errors, happen when the result is consumed. A failure is kept in the
// generator and raised on consumption; limits still stop the render at once.
template <FilterFn Eager>
Value lazy(Interp& in, const Value& v, Args& args) {
  try {
    return Eager(in, v, args);
  } catch (const TemplateError& e) {
    if (e.kind == ErrorKind::kLimit) throw;
    auto data = std::make_shared<ListData>();
    data->kind = ListKind::kGenerator;
    data->error = std::make_shared<const TemplateError>(e);
    return Value::list(std::move(data));
  }
}

int64_t int_arg(const std::optional<Value>& v, int64_t dflt, std::string_view what) {
  if (!v || v->is_none()) return dflt;
  if (v->is_integral()) return v->get_int();
  if (v->kind() == Kind::kFloat && std::isfinite(v->get_float()) &&
      std::fabs(v->get_float()) < 9e18) {
    return static_cast<int64_t>(v->get_float());
  }
  fail("{}: expected an integer, got {}", what, v->type_name());
}

bool bool_arg(const std::optional<Value>& v) {
  return v && v->truthy();
}

// make_attrgetter: _prepare_attribute_parts + environment.getitem chain ("a.b.0"); a
// default replaces an Undefined after every part.
Value get_attribute(Interp& in, const Value& item, const Value& attribute,
                    const Value* dflt = nullptr) {
  auto apply_default = [&](Value v) { return dflt != nullptr && v.is_undefined() ? *dflt : v; };
  if (!attribute.is_string()) return apply_default(in.get_item(item, attribute));
  Value v = item;
  const std::string& path = attribute.str();
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    const bool digits =
        !part.empty() && part.size() < 18 &&
        std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = apply_default(
        in.get_item(v, digits ? Value::integer(std::stoll(part)) : Value::string(part)));
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

Value ignore_case(const Value& v) {
  return v.is_string() ? Value::string(py_lower(v.str())) : v;
}

int64_t length_of(Interp& in, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString:
      return static_cast<int64_t>(count_code_points(v.str()));
    case Kind::kList:
      if (v.list().kind == ListKind::kGenerator) fail("object of type 'generator' has no len()");
      return static_cast<int64_t>(v.list().items.size());
    case Kind::kDict:
      return static_cast<int64_t>(v.dict().size());
    case Kind::kObject:
      if (v.object().attributes() == nullptr) {
        if (auto items = v.object().items(in)) return static_cast<int64_t>(items->size());
      }
      break;
    default:
      break;
  }
  fail("object of type '{}' has no len()", v.type_name());
}

// ---- filters

Value f_abs(Interp& /*in*/, const Value& v, Args& args) {
  bind_args("abs", args, {});
  if (v.is_integral()) {
    if (v.get_int() == INT64_MIN) fail_kind(ErrorKind::kUnsupported, "integer overflow");
    return Value::integer(v.get_int() < 0 ? -v.get_int() : v.get_int());
  }
  if (v.kind() == Kind::kFloat) return Value::number(std::fabs(v.get_float()));

  fail("bad operand type for abs(): '{}'", v.type_name());
}

Value f_attr(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("attr", args, {"name"});
  if (!a[0]) fail("attr() missing required argument 'name'");
  const std::string name = to_str(*a[0]);
  if (v.is_undefined()) fail("{}", v.undefined_message());
  if (v.is_object()) {
    if (auto r = v.object().get_attr(name, in)) return *r;
  } else if (auto m = find_method(in, v, name)) {
    return *m;
  }
  return in.undefined_attr(v, name);
}

Value f_batch(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("batch", args, {"linecount", "fill_with"});
  const int64_t n = int_arg(a[0], 0, "batch");
  std::vector<Value> out;
  std::vector<Value> tmp;
  for (Value& item : in.iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(make_list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(std::move(item));
  }
  if (!tmp.empty()) {
    if (a[1] && !a[1]->is_none() && static_cast<int64_t>(tmp.size()) < n) {
      in.check_items(static_cast<size_t>(n));
      tmp.resize(static_cast<size_t>(n), *a[1]);
    }
    out.push_back(make_list(std::move(tmp)));
  }
  return generator(in, std::move(out));
}

// soft_str(v): Markup stays Markup, so string filters keep the flavour of their input.
Value soft_result(Interp& in, const Value& v, std::string s) {
  in.check_string(s.size());
  return v.is_markup() ? Value::markup(std::move(s)) : Value::string(std::move(s));
}

Value f_capitalize(Interp& in, const Value& v, Args& args) {
  bind_args("capitalize", args, {});
  return soft_result(in, v, py_capitalize(to_str(v)));
}

Value f_center(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("center", args, {"width"});
  Args inner;
  inner.positional.push_back(Value::integer(int_arg(a[0], 80, "center")));
  return *call_method(in, v.is_markup() ? v : Value::string(to_str(v)), "center", inner);
}

Value f_length(Interp& in, const Value& v, Args& args) {
  bind_args("length", args, {});
  return Value::integer(length_of(in, v));
}

Value f_default(Interp& /*in*/, const Value& v, Args& args) {
  const auto a = bind_args("default", args, {"default_value", "boolean"});
  if (v.is_undefined() || (bool_arg(a[1]) && !v.truthy())) {
    return a[0] ? *a[0] : Value::string("");
  }
  return v;
}

Value f_dictsort(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = bool_arg(a[0]);
  const std::string by = a[1] ? to_str(*a[1]) : "key";
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  if (v.is_undefined()) fail("{}", v.undefined_message());
  if (!v.is_dict()) fail("'{}' object has no attribute 'items'", v.type_name());
  std::vector<std::pair<Value, Value>> items = v.dict().items;
  in.check_items(items.size());
  const bool by_key = by == "key";
  auto key = [&](const std::pair<Value, Value>& p) {
    const Value& k = by_key ? p.first : p.second;
    return case_sensitive ? k : ignore_case(k);
  };
  const bool reverse = bool_arg(a[2]);
  std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_less(key(y), key(x)) : py_less(key(x), key(y));
  });
  std::vector<Value> out;
  for (auto& [k, val] : items)
    out.push_back(make_list({k, val}, ListKind::kTuple));
  return make_list(std::move(out));
}

Value f_escape(Interp& in, const Value& v, Args& args) {
  bind_args("escape", args, {});
  const Value r = markup_escape(v);
  in.check_string(r.str().size());
  return r;
}

Value f_forceescape(Interp& in, const Value& v, Args& args) {
  bind_args("forceescape", args, {});
  std::string s = html_escape(to_str(v));
  in.check_string(s.size());
  return Value::markup(std::move(s));
}

Value f_first(Interp& in, const Value& v, Args& args) {
  bind_args("first", args, {});
  if (v.is_list() && v.list().kind == ListKind::kGenerator) {
    const ListData& l = v.list();
    if (l.consumed < l.items.size()) return l.items[l.consumed++];
    if (l.error) throw *l.error;
    return Value::undefined("No first item, sequence was empty.");
  }
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interp& in, const Value& v, Args& args) {
  bind_args("last", args, {});
  if (v.is_list() && v.list().kind == ListKind::kGenerator) {
    fail("'generator' object is not reversible");
  }
  std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

std::optional<double> to_float(const Value& v) {
  if (v.is_number()) return v.get_float();
  if (v.is_string()) return py_parse_float(v.str());
  return std::nullopt;
}

Value f_float(Interp& /*in*/, const Value& v, Args& args) {
  const auto a = bind_args("float", args, {"default"});
  if (v.is_undefined()) fail("{}", v.undefined_message());
  if (auto f = to_float(v)) return Value::number(*f);
  return a[0] ? *a[0] : Value::number(0.0);
}

Value f_int(Interp& /*in*/, const Value& v, Args& args) {
  const auto a = bind_args("int", args, {"default", "base"});
  const Value dflt = a[0] ? *a[0] : Value::integer(0);
  const int64_t base = int_arg(a[1], 10, "int");
  if (v.is_undefined()) fail("{}", v.undefined_message());
  if (v.is_integral()) return Value::integer(v.get_int());
  if (v.is_string()) {
    if (auto i = py_parse_int(v.str(), static_cast<int>(base))) return Value::integer(*i);
  }
  if (auto f = to_float(v)) {
    if (std::isfinite(*f) && std::fabs(*f) < 9.2e18)
      return Value::integer(static_cast<int64_t>(*f));
  }
  return dflt;
}

Value f_format(Interp& in, const Value& v, Args& args) {
  if (!args.positional.empty() && !args.keywords.empty()) {
    fail("can't handle positional and keyword arguments at the same time");
  }
  Value fmt_args;
  if (!args.keywords.empty()) {
    DictData d;
    for (auto& [k, val] : args.keywords)
      d.set(Value::string(k), val);
    fmt_args = make_dict(std::move(d));
  } else {
    fmt_args = make_list(args.positional, ListKind::kTuple);
  }
  return percent_format(in, v.is_markup() ? v : Value::string(to_str(v)), fmt_args);
}

Value f_indent(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("indent", args, {"width", "first", "blank"});
  // do_indent starts with `s += "\n"`: no str() conversion.
  if (v.is_undefined()) fail("{}", v.undefined_message());
  if (!v.is_string()) fail("unsupported operand type(s) for +=: '{}' and 'str'", v.type_name());
  std::string indention;
  if (a[0] && a[0]->is_string()) {
    indention = a[0]->str();
  } else {
    const int64_t w = int_arg(a[0], 4, "indent");
    in.check_string(w > 0 ? static_cast<size_t>(w) : 0);
    indention.assign(w > 0 ? static_cast<size_t>(w) : 0, ' ');
  }
  std::string s = to_str(v) + "\n";
  const std::vector<std::string> lines = py_splitlines(s, false);
  size_t total = s.size();
  for (size_t k = 0; k < lines.size(); ++k)
    total += indention.size() + 1;
  in.check_string(total);
  std::string out;
  if (bool_arg(a[2])) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k > 0) out += "\n" + indention;
      out += lines[k];
    }
  } else if (!lines.empty()) {
    out = lines[0];
    for (size_t k = 1; k < lines.size(); ++k) {
      out += '\n';
      if (!lines[k].empty()) out += indention;
      out += lines[k];
    }
  }
  if (bool_arg(a[1])) out = indention + out;
  return v.is_markup() ? Value::markup(std::move(out)) : Value::string(std::move(out));
}

Value f_items(Interp& in, const Value& v, Args& args) {
  bind_args("items", args, {});
  if (v.is_undefined()) return generator(in, {});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.dict().items)
    out.push_back(make_list({k, val}, ListKind::kTuple));
  return generator(in, std::move(out));
}

Value f_join(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("join", args, {"d", "attribute"});
  const std::string sep = a[0] ? to_str(*a[0]) : "";
  std::string out;
  bool first = true;
  for (const Value& item : in.iterate(v)) {
    if (!first) out += sep;
    first = false;
    append_str(out, a[1] && !a[1]->is_none() ? get_attribute(in, item, *a[1]) : item);
    in.check_string(out.size());
  }
  return Value::string(std::move(out));
}

Value f_list(Interp& in, const Value& v, Args& args) {
  bind_args("list", args, {});
  return make_list(in.iterate(v));
}

Value f_lower(Interp& in, const Value& v, Args& args) {
  bind_args("lower", args, {});
  return soft_result(in, v, py_lower(to_str(v)));
}

Value f_upper(Interp& in, const Value& v, Args& args) {
  bind_args("upper", args, {});
  return soft_result(in, v, py_upper(to_str(v)));
}

Value f_map(Interp& in, const Value& v, Args& args) {
  std::vector<Value> out;
  if (args.positional.empty()) {
    Value attribute;
    Value dflt = Value::none();
    bool has_attribute = false;
    for (auto& [k, val] : args.keywords) {
      if (k == "attribute") {
        attribute = val;
        has_attribute = true;
      } else if (k == "default") {
        dflt = val;
      } else {
        fail("Unexpected keyword argument '{}'", k);
      }
    }
    if (!has_attribute) fail("map requires a filter argument");
    for (const Value& item : in.iterate(v)) {
      out.push_back(get_attribute(in, item, attribute, dflt.is_none() ? nullptr : &dflt));
    }
    return generator(in, std::move(out));
  }
  const std::string name = to_str(args.positional[0]);
  Args rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keywords = args.keywords;
  for (const Value& item : in.iterate(v)) {
    Args call = rest;
    out.push_back(in.apply_filter(name, item, call));
  }
  return generator(in, std::move(out));
}

Value min_max(Interp& in, const Value& v, Args& args, bool want_max) {
  const auto a = bind_args(want_max ? "max" : "min", args, {"case_sensitive", "attribute"});
  const std::vector<Value> items = in.iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const bool case_sensitive = bool_arg(a[0]);
  auto key = [&](const Value& item) {
    Value k = a[1] && !a[1]->is_none() ? get_attribute(in, item, *a[1]) : item;
    return case_sensitive ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t k = 1; k < items.size(); ++k) {
    Value candidate = key(items[k]);
    if (want_max ? py_less(best_key, candidate) : py_less(candidate, best_key)) {
      best = k;
      best_key = std::move(candidate);
    }
  }
  return items[best];
}

Value f_max(Interp& in, const Value& v, Args& args) {
  return min_max(in, v, args, true);
}
Value f_min(Interp& in, const Value& v, Args& args) {
  return min_max(in, v, args, false);
}

Value select_or_reject(Interp& in, const Value& v, Args& args, bool select, bool by_attr) {
  size_t off = 0;
  Value attribute;
  if (by_attr) {
    if (args.positional.empty()) fail("Missing parameter for attribute name");
    attribute = args.positional[0];
    off = 1;
  }
  std::optional<std::string> test;
  Args test_args;
  if (args.positional.size() > off) {
    test = to_str(args.positional[off]);
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(off) + 1,
                                args.positional.end());
  }
  test_args.keywords = args.keywords;
  std::vector<Value> out;
  if (v.truthy()) {
    for (Value& item : in.iterate(v)) {
      const Value subject = by_attr ? get_attribute(in, item, attribute) : item;
      bool r = false;
      if (test) {
        Args call = test_args;
        r = in.apply_test(*test, subject, call);
      } else {
        r = subject.truthy();
      }
      if (r == select) out.push_back(std::move(item));
    }
  }
  return generator(in, std::move(out));
}

Value f_select(Interp& in, const Value& v, Args& a) {
  return select_or_reject(in, v, a, true, false);
}
Value f_reject(Interp& in, const Value& v, Args& a) {
  return select_or_reject(in, v, a, false, false);
}
Value f_selectattr(Interp& in, const Value& v, Args& a) {
  return select_or_reject(in, v, a, true, true);
}
Value f_rejectattr(Interp& in, const Value& v, Args& a) {
  return select_or_reject(in, v, a, false, true);
}

Value f_replace(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("replace", args, {"old", "new", "count"});
  if (!a[0] || !a[1]) fail("replace() missing required arguments");
  Args inner;
  inner.positional = {Value::string(to_str(*a[0])), Value::string(to_str(*a[1]))};
  if (a[2] && !a[2]->is_none()) inner.positional.push_back(*a[2]);
  return *call_method(in, Value::string(to_str(v)), "replace", inner);
}

Value f_reverse(Interp& in, const Value& v, Args& args) {
  bind_args("reverse", args, {});
  if (v.is_string()) {
    std::u32string cps = to_code_points(v.str());
    std::reverse(cps.begin(), cps.end());
    return v.same_flavour(from_code_points(cps));
  }
  std::vector<Value> items = in.iterate(v);
  std::reverse(items.begin(), items.end());
  if (v.is_list() && v.list().kind == ListKind::kGenerator) return make_list(std::move(items));
  return generator(in, std::move(items));  // a reverse iterator
}

Value f_round(Interp& /*in*/, const Value& v, Args& args) {
  const auto a = bind_args("round", args, {"precision", "method"});
  const int64_t precision = int_arg(a[0], 0, "round");
  const std::string method = a[1] ? to_str(*a[1]) : "common";
  if (method != "common" && method != "ceil" && method != "floor") {
    fail("method must be common, ceil or floor");
  }
  if (v.is_undefined() && method != "common") fail("{}", v.undefined_message());
  if (!v.is_number()) fail("type {} doesn't define __round__ method", v.type_name());
  if (method == "common") {
    if (v.is_integral()) {
      if (precision >= 0) return Value::integer(v.get_int());
      if (precision < -18) return Value::integer(0);
      int64_t p = 1;
      for (int64_t k = 0; k < -precision; ++k)
        p *= 10;
      const int64_t x = v.get_int();
      int64_t q = x / p;
      int64_t r = x % p;
      if (r < 0) {
        r += p;
        --q;
      }
      if (r * 2 > p || (r * 2 == p && (q % 2) != 0)) ++q;
      int64_t result = 0;
      if (__builtin_mul_overflow(q, p, &result))
        fail_kind(ErrorKind::kUnsupported, "integer overflow");
      return Value::integer(result);
    }
    return Value::number(py_round(v.get_float(), precision));
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.get_float() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

Value f_safe(Interp& in, const Value& v, Args& args) {
  bind_args("safe", args, {});
  if (v.is_markup()) return v;
  std::string s = to_str(v);
  in.check_string(s.size());
  return Value::markup(std::move(s));
}

Value f_slice(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("slice", args, {"slices", "fill_with"});
  const int64_t slices = int_arg(a[0], 0, "slice");
  if (slices <= 0) fail("integer division or modulo by zero");
  in.check_items(static_cast<size_t>(std::min<int64_t>(slices, INT32_MAX)));
  const std::vector<Value> seq = in.iterate(v);
  const auto length = static_cast<int64_t>(seq.size());
  const int64_t per = length / slices;
  const int64_t extra = length % slices;
  int64_t offset = 0;
  std::vector<Value> out;
  for (int64_t n = 0; n < slices; ++n) {
    const int64_t start = offset + n * per;
    if (n < extra) ++offset;
    const int64_t end = offset + (n + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (a[1] && !a[1]->is_none() && n >= extra) tmp.push_back(*a[1]);
    out.push_back(make_list(std::move(tmp)));
  }
  return generator(in, std::move(out));
}

Value f_sort(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = bool_arg(a[0]);
  const bool case_sensitive = bool_arg(a[1]);
  std::vector<Value> attrs;
  if (a[2] && a[2]->is_string()) {
    size_t start = 0;
    const std::string& s = a[2]->str();
    while (true) {
      const size_t comma = s.find(',', start);
      attrs.push_back(
          Value::string(s.substr(start, comma == std::string::npos ? comma : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else if (a[2] && !a[2]->is_none()) {
    attrs.push_back(*a[2]);
  }
  std::vector<Value> items = in.iterate(v);
  in.step(items.size() * 8);
  std::vector<std::pair<Value, size_t>> keyed;
  keyed.reserve(items.size());
  for (size_t k = 0; k < items.size(); ++k) {
    std::vector<Value> key;
    if (attrs.empty()) {
      key.push_back(case_sensitive ? items[k] : ignore_case(items[k]));
    } else {
      for (const Value& attr : attrs) {
        Value part = get_attribute(in, items[k], attr);
        key.push_back(case_sensitive ? part : ignore_case(part));
      }
    }
    keyed.emplace_back(make_list(std::move(key)), k);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_less(y.first, x.first) : py_less(x.first, y.first);
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (const auto& [key, idx] : keyed)
    out.push_back(items[idx]);
  return make_list(std::move(out));
}

Value f_string(Interp& in, const Value& v, Args& args) {
  bind_args("string", args, {});
  return v.is_string() ? v : str_value(in, to_str(v));
}

Value f_sum(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("sum", args, {"attribute", "start"});
  Value total = a[1] ? *a[1] : Value::integer(0);
  if (total.is_string()) fail("sum() can't sum strings [use ''.join(seq) instead]");
  for (const Value& item : in.iterate(v)) {
    total =
        binary_op(in, "+", total, a[0] && !a[0]->is_none() ? get_attribute(in, item, *a[0]) : item);
  }
  return total;
}

Value f_title(Interp& in, const Value& v, Args& args) {
  bind_args("title", args, {});
  // Words start after runs of [-\s({\[<]; each word is item[0].upper() + item[1:].lower().
  const std::string s = to_str(v);
  std::string out;
  bool word_start = true;
  for (size_t i = 0; i < s.size();) {
    const char32_t c = decode_utf8(s, i);
    const bool delim = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c);
    if (delim) {
      append_utf8(out, c);
      word_start = true;
    } else if (word_start) {
      if (c == 0xDF) {
        out += "SS";
      } else {
        append_utf8(out, to_upper_cp(c));
      }
      word_start = false;
    } else {
      append_utf8(out, to_lower_cp(c));
    }
  }
  return str_value(in, std::move(out));
}

Value f_tojson(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions options;
  options.ensure_ascii = bool_arg(a[0]);
  options.sort_keys = bool_arg(a[3]);
  if (a[1] && !a[1]->is_none()) {
    if (a[1]->is_string()) {
      options.indent = a[1]->str();
    } else if (a[1]->is_integral()) {
      const int64_t n = a[1]->get_int();
      if (n > 1000) fail_kind(ErrorKind::kLimit, "tojson indent too large");
      options.indent = std::string(n > 0 ? static_cast<size_t>(n) : 0, ' ');
    } else {
      fail("can't multiply sequence by non-int of type '{}'", a[1]->type_name());
    }
    options.item_separator = ",";
  }
  if (a[2] && !a[2]->is_none()) {
    const std::vector<Value> seps = in.iterate(*a[2]);
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string()) {
      fail("separators must be a pair of strings");
    }
    options.item_separator = seps[0].str();
    options.key_separator = seps[1].str();
  }
  std::string out;
  append_json(in, out, v, options);
  return Value::string(std::move(out));
}

Value f_trim(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("trim", args, {"chars"});
  const std::string s = to_str(v);
  const std::string* chars = a[0] && !a[0]->is_none() ? &a[0]->str() : nullptr;
  if (a[0] && !a[0]->is_none() && !a[0]->is_string()) fail("strip arg must be None or str");
  if (v.is_markup()) {
    // Markup.strip escapes its argument first.
    const std::string escaped = chars != nullptr ? html_escape(*chars) : std::string();
    return Value::markup(
        std::string(py_strip(s, chars != nullptr ? &escaped : nullptr, true, true)));
  }
  return str_value(in, std::string(py_strip(s, chars, true, true)));
}

Value f_truncate(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("truncate", args, {"length", "killwords", "end", "leeway"});
  const int64_t length = int_arg(a[0], 255, "truncate");
  const bool killwords = bool_arg(a[1]);
  const std::string end = a[2] ? to_str(*a[2]) : "...";
  const int64_t leeway = int_arg(a[3], 5, "truncate");
  const auto end_len = static_cast<int64_t>(count_code_points(end));
  if (length < end_len) fail("expected length >= {}, got {}", end_len, length);
  if (leeway < 0) fail("expected leeway >= 0, got {}", leeway);
  const std::string s = to_str(v);
  const std::u32string cps = to_code_points(s);
  if (static_cast<int64_t>(cps.size()) <= length + leeway) {
    return v.is_string() ? v : Value::string(s);
  }
  std::string head =
      from_code_points(std::u32string_view(cps).substr(0, static_cast<size_t>(length - end_len)));
  if (!killwords) {
    const size_t space = head.rfind(' ');
    if (space != std::string::npos) head = head.substr(0, space);
  }
  // Markup + str escapes the appended end.
  if (v.is_markup()) return Value::markup(head + html_escape(end));
  return str_value(in, head + end);
}

Value f_unique(Interp& in, const Value& v, Args& args) {
  const auto a = bind_args("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = bool_arg(a[0]);
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const Value& item : in.iterate(v)) {
    Value key = a[1] && !a[1]->is_none() ? get_attribute(in, item, *a[1]) : item;
    if (!case_sensitive) key = ignore_case(key);
    require_hashable(key);
    in.step(seen.size() / 16);
    bool dup = false;
    for (const Value& s : seen) {
      if (py_equal(s, key)) {
        dup = true;
        break;
      }
    }
    if (!dup) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return generator(in, std::move(out));
}

Value f_wordcount(Interp& /*in*/, const Value& v, Args& args) {
  bind_args("wordcount", args, {});
  const std::string s = to_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    const bool w = py_is_word(decode_utf8(s, i));
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

[[noreturn]] Value f_unsupported(Interp& /*in*/, const Value& /*v*/, Args& /*args*/) {
  fail_kind(ErrorKind::kUnsupported, "this Jinja filter is not supported in chat templates");
}

struct FilterEntry {
  std::string_view name;
  FilterFn fn;
};

constexpr FilterEntry kFilters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", lazy<f_batch>},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", f_unsupported},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"groupby", f_unsupported},
    {"indent", f_indent},
    {"int", f_int},
    {"items", lazy<f_items>},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", lazy<f_map>},
    {"max", f_max},
    {"min", f_min},
    {"pprint", f_unsupported},
    {"random", f_unsupported},
    {"reject", lazy<f_reject>},
    {"rejectattr", lazy<f_rejectattr>},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", lazy<f_select>},
    {"selectattr", lazy<f_selectattr>},
    {"slice", lazy<f_slice>},
    {"sort", f_sort},
    {"string", f_string},
    {"striptags", f_unsupported},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", lazy<f_unique>},
    {"upper", f_upper},
    {"urlencode", f_unsupported},
    {"urlize", f_unsupported},
    {"wordcount", f_wordcount},
    {"wordwrap", f_unsupported},
    {"xmlattr", f_unsupported},
};

}  // namespace

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

Value markup_escape(const Value& v) {
  if (v.is_markup()) return v;
  return Value::markup(html_escape(to_str(v)));
}

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kFilters) {
    if (f.name == name) return f.fn;
  }
  return nullptr;
}

}  // namespace pagoda::jinja
