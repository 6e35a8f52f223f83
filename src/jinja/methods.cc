// Methods of str, list/tuple and dict as the ImmutableSandboxedEnvironment exposes them
// (mutating list/dict methods are "unsafe"), markupsafe.Markup's escaping overrides of the
// str methods, and Python-style argument binding for builtins (bind_args).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/interpreter.h"
#include "jinja/py_text.h"

namespace pagoda::jinja {

namespace {

constexpr std::string_view kStrMethods[] = {
    "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
    "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
    "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
    "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
    "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
    "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
    "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
    "swapcase",     "title",       "translate", "upper",      "zfill"};
constexpr std::string_view kListSafe[] = {"copy", "count", "index"};
constexpr std::string_view kListUnsafe[] = {"append", "clear",  "extend",  "insert",
                                            "pop",    "remove", "reverse", "sort"};
constexpr std::string_view kDictSafe[] = {"copy", "fromkeys", "get", "items", "keys", "values"};
constexpr std::string_view kDictUnsafe[] = {"clear", "pop", "popitem", "setdefault", "update"};

template <size_t N>
bool in_list(const std::string_view (&list)[N], std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

enum class MethodKind { kNone, kSafe, kUnsafe };

MethodKind classify(const Value& self, std::string_view name) {
  if (self.is_string()) return in_list(kStrMethods, name) ? MethodKind::kSafe : MethodKind::kNone;
  if (self.is_dict()) {
    if (in_list(kDictSafe, name)) return MethodKind::kSafe;
    if (in_list(kDictUnsafe, name)) return MethodKind::kUnsafe;
    return MethodKind::kNone;
  }
  if (self.is_list()) {
    const ListKind k = self.list().kind;
    if (k == ListKind::kList) {
      if (in_list(kListSafe, name)) return MethodKind::kSafe;
      if (in_list(kListUnsafe, name)) return MethodKind::kUnsafe;
    } else if (k == ListKind::kTuple && (name == "count" || name == "index")) {
      return MethodKind::kSafe;
    }
  }
  return MethodKind::kNone;
}

class BoundMethod : public Object {
 public:
  BoundMethod(Value self, std::string name) : self_(std::move(self)), name_(std::move(name)) {}
  std::string_view type_name() const override { return "builtin_function_or_method"; }
  void repr(std::string& out, ReprState& /*state*/) const override {
    out += fmt::format("<built-in method {} of {} object>", name_, self_.type_name());
  }
  bool callable() const override { return true; }
  Value call(Interp& in, Args& args) override {
    if (auto r = call_method(in, self_, name_, args)) return std::move(*r);
    fail("'{}' object has no attribute '{}'", self_.type_name(), name_);
  }

 private:
  Value self_;
  std::string name_;
};

std::string repr_str(std::string_view s) {
  std::string out;
  append_py_repr(out, s);
  return out;
}

const std::string* opt_str(const std::optional<Value>& v, std::string_view what) {
  if (!v || v->is_none()) return nullptr;
  if (!v->is_string()) fail("{} arg must be None or str", what);
  return &v->str();
}

int64_t opt_int(const std::optional<Value>& v, int64_t dflt, std::string_view what) {
  if (!v || v->is_none()) return dflt;
  if (!v->is_integral()) {
    fail("'{}' object cannot be interpreted as an integer ({})", v->type_name(), what);
  }
  return v->get_int();
}

const std::string& need_str(const std::optional<Value>& v, std::string_view what,
                            int position = 0) {
  if (!v) fail("{}() missing required argument", what);
  if (!v->is_string()) {
    if (position > 0) {
      fail("{}() argument {} must be str, not {}", what, position, v->type_name());
    }
    fail("{}() argument must be str, not {}", what, v->type_name());
  }
  return v->str();
}

Value string_list(Interp& in, std::vector<std::string> parts) {
  in.check_items(parts.size());
  std::vector<Value> out;
  out.reserve(parts.size());
  for (auto& p : parts)
    out.push_back(Value::string(std::move(p)));
  return make_list(std::move(out));
}

// s[start:end] over code points for the (start, end) arguments of find/count/startswith.
std::string_view code_point_window(const std::string& s, const std::optional<Value>& start,
                                   const std::optional<Value>& end, std::string& storage) {
  if ((!start || start->is_none()) && (!end || end->is_none())) return s;
  const std::u32string cps = to_code_points(s);
  const auto n = static_cast<int64_t>(cps.size());
  auto clamp = [&](const std::optional<Value>& v, int64_t dflt) {
    int64_t i = opt_int(v, dflt, "slice");
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return std::min(i, n);
  };
  const int64_t b = clamp(start, 0);
  const int64_t e = clamp(end, n);
  storage = b < e ? from_code_points(std::u32string_view(cps).substr(static_cast<size_t>(b),
                                                                     static_cast<size_t>(e - b)))
                  : std::string();
  return storage;
}

std::string pad(Interp& in, const std::string& s, int64_t width, char32_t fill, char align) {
  const auto len = static_cast<int64_t>(count_code_points(s));
  if (width <= len) return s;
  const int64_t marg = width - len;
  in.check_string(static_cast<size_t>(marg) * 4 + s.size());
  int64_t left = 0;
  if (align == '^') {
    left = marg / 2 + (marg & width & 1);
  } else if (align == '>') {
    left = marg;
  }
  std::string out;
  for (int64_t k = 0; k < left; ++k)
    append_utf8(out, fill);
  out += s;
  for (int64_t k = left; k < marg; ++k)
    append_utf8(out, fill);
  return out;
}

Value str_method(Interp& in, const std::string& s, std::string_view name, Args& args) {
  auto bind = [&](std::initializer_list<std::string_view> params) {
    return bind_args(name, args, params);
  };
  auto make = [&](std::string r) { return in.make_string(std::move(r)); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const auto a = bind({"chars"});
    const std::string* chars = opt_str(a[0], name);
    return make(std::string(py_strip(s, chars, name != "rstrip", name != "lstrip")));
  }
  if (name == "split" || name == "rsplit") {
    const auto a = bind({"sep", "maxsplit"});
    if (a[0] && !a[0]->is_none() && !a[0]->is_string()) {
      fail("must be str or None, not {}", a[0]->type_name());
    }
    const std::string* sep = opt_str(a[0], "split");
    if (sep != nullptr && sep->empty()) fail("empty separator");
    const int64_t maxsplit = opt_int(a[1], -1, "maxsplit");
    return string_list(in,
                       name == "split" ? py_split(s, sep, maxsplit) : py_rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    const auto a = bind({"keepends"});
    return string_list(in, py_splitlines(s, a[0] && a[0]->truthy()));
  }
  if (name == "upper") return make(py_upper(s));
  if (name == "lower" || name == "casefold") return make(py_lower(s));
  if (name == "title") return make(py_title(s));
  if (name == "capitalize") return make(py_capitalize(s));
  if (name == "swapcase") return make(py_swapcase(s));
  if (name == "startswith" || name == "endswith") {
    const auto a = bind({"prefix", "start", "end"});
    if (!a[0]) fail("{}() takes at least 1 argument (0 given)", name);
    std::string storage;
    const std::string_view window = code_point_window(s, a[1], a[2], storage);
    auto test = [&](const Value& p) {
      if (!p.is_string()) {
        fail("{} first arg must be str or a tuple of str, not {}", name, p.type_name());
      }
      const std::string& x = p.str();
      if (x.size() > window.size()) return false;
      return name == "startswith" ? window.substr(0, x.size()) == x
                                  : window.substr(window.size() - x.size()) == x;
    };
    if (a[0]->is_list() && a[0]->list().kind == ListKind::kTuple) {
      for (const Value& p : a[0]->list().items) {
        if (test(p)) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    return Value::boolean(test(*a[0]));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    const auto a = bind({"sub", "start", "end"});
    const std::string& sub = need_str(a[0], name);
    std::string storage;
    const std::string_view window = code_point_window(s, a[1], a[2], storage);
    if (name == "count") return Value::integer(py_count(window, sub));
    int64_t r = py_find(window, sub, name[0] == 'r');
    if (r >= 0 && a[1] && !a[1]->is_none()) {
      const auto n = static_cast<int64_t>(count_code_points(s));
      int64_t b = opt_int(a[1], 0, "start");
      if (b < 0) b = std::max<int64_t>(0, b + n);
      r += std::min(b, n);
    }
    if (r < 0 && (name == "index" || name == "rindex")) fail("substring not found");
    return Value::integer(r);
  }
  if (name == "replace") {
    if (!args.keywords.empty()) fail("replace() takes no keyword arguments");
    if (args.positional.size() < 2) {
      fail("replace expected at least 2 arguments, got {}", args.positional.size());
    }
    const auto a = bind({"old", "new", "count"});
    const std::string& old = need_str(a[0], "replace", 1);
    const std::string& repl = need_str(a[1], "replace", 2);
    const int64_t count = opt_int(a[2], -1, "count");
    if (!old.empty()) {
      const int64_t hits = py_count(s, old);
      const int64_t used = count < 0 ? hits : std::min(count, hits);
      const auto growth = static_cast<int64_t>(repl.size()) - static_cast<int64_t>(old.size());
      if (growth > 0 && used > 0) {
        in.check_string(s.size() + static_cast<size_t>(used) * static_cast<size_t>(growth));
      }
    } else {
      in.check_string(s.size() + (count_code_points(s) + 1) * repl.size());
    }
    return make(py_replace(s, old, repl, count));
  }
  if (name == "join") {
    const auto a = bind({"iterable"});
    if (!a[0]) fail("join() takes exactly one argument (0 given)");
    std::string out;
    size_t k = 0;
    for (const Value& v : in.iterate(*a[0])) {
      if (!v.is_string()) {
        fail("sequence item {}: expected str instance, {} found", k, v.type_name());
      }
      if (k++ > 0) out += s;
      out += v.str();
      in.check_string(out.size());
    }
    return Value::string(std::move(out));
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    if (args.positional.empty()) fail("{} expected at least 1 argument, got 0", name);
    const auto a = bind({"width", "fillchar"});
    const int64_t width = opt_int(a[0], 0, "width");
    char32_t fill = ' ';
    if (a[1]) {
      if (!a[1]->is_string() || count_code_points(a[1]->str()) != 1) {
        fail("The fill character must be exactly one character long");
      }
      size_t i = 0;
      fill = decode_utf8(a[1]->str(), i);
    }
    return make(pad(in, s, width, fill, name == "center" ? '^' : name == "ljust" ? '<' : '>'));
  }
  if (name == "zfill") {
    if (args.positional.size() != 1 || !args.keywords.empty()) {
      fail("str.zfill() takes exactly one argument ({} given)", args.positional.size());
    }
    const auto a = bind({"width"});
    const int64_t width = opt_int(a[0], 0, "width");
    const auto len = static_cast<int64_t>(count_code_points(s));
    if (width <= len) return Value::string(s);
    in.check_string(static_cast<size_t>(width));
    const bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
    std::string out = sign ? s.substr(0, 1) : "";
    out.append(static_cast<size_t>(width - len), '0');
    out += sign ? s.substr(1) : s;
    return Value::string(std::move(out));
  }
  if (name == "partition" || name == "rpartition") {
    const auto a = bind({"sep"});
    const std::string& sep = need_str(a[0], name);
    if (sep.empty()) fail("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    std::vector<Value> parts;
    if (at == std::string::npos) {
      const bool left = name == "partition";
      parts = {Value::string(left ? s : ""), Value::string(""), Value::string(left ? "" : s)};
    } else {
      parts = {Value::string(s.substr(0, at)), Value::string(sep),
               Value::string(s.substr(at + sep.size()))};
    }
    return make_list(std::move(parts), ListKind::kTuple);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    const auto a = bind({"affix"});
    const std::string& x = need_str(a[0], name);
    if (name == "removeprefix" && s.compare(0, x.size(), x) == 0 && s.size() >= x.size()) {
      return Value::string(s.substr(x.size()));
    }
    if (name == "removesuffix" && s.size() >= x.size() && !x.empty() &&
        s.compare(s.size() - x.size(), x.size(), x) == 0) {
      return Value::string(s.substr(0, s.size() - x.size()));
    }
    return Value::string(s);
  }
  if (name == "format") return str_format(in, s, args);
  if (name.substr(0, 2) == "is") {
    bind({});
    if (name == "isascii") return Value::boolean(is_ascii(s));
    if (name == "islower") return Value::boolean(py_islower(s));
    if (name == "isupper") return Value::boolean(py_isupper(s));
    bool (*pred)(char32_t) = nullptr;
    if (name == "isalnum") pred = py_isalnum;
    if (name == "isalpha") pred = py_isalpha;
    if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") pred = py_isdigit;
    if (name == "isspace") pred = py_isspace;
    if (pred != nullptr) {
      if (s.empty()) return Value::boolean(false);
      for (size_t i = 0; i < s.size();) {
        if (!pred(decode_utf8(s, i))) return Value::boolean(false);
      }
      return Value::boolean(true);
    }
  }
  fail_kind(ErrorKind::kUnsupported, "str.{}() is not supported", name);
}

// markupsafe.Markup overrides: these str methods escape their string arguments and return
// Markup; split/partition return Markup pieces; join and format escape what they insert.
constexpr std::string_view kMarkupWrapped[] = {
    "capitalize", "title",  "lower", "upper",     "replace",    "ljust",    "rjust", "lstrip",
    "rstrip",     "center", "strip", "translate", "expandtabs", "swapcase", "zfill"};

void escape_string_args(Args& args) {
  for (Value& v : args.positional) {
    if (v.is_string()) v = markup_escape(v);
  }
  for (auto& [k, v] : args.keywords) {
    if (v.is_string()) v = markup_escape(v);
  }
}

Value to_markup(Value v) {
  if (v.is_string()) return Value::markup(v.str());
  if (v.is_list()) {
    std::vector<Value> items;
    for (const Value& item : v.list().items)
      items.push_back(to_markup(item));
    return make_list(std::move(items), v.list().kind);
  }
  return v;
}

std::optional<Value> markup_method(Interp& in, const Value& self, std::string_view name,
                                   Args& args) {
  if (in_list(kMarkupWrapped, name) || name == "partition" || name == "rpartition" ||
      name == "format") {
    escape_string_args(args);
  } else if (name == "join") {
    const auto a = bind_args("join", args, {"iterable"});
    if (!a[0]) fail("join() takes exactly one argument (0 given)");
    std::vector<Value> items;
    for (const Value& v : in.iterate(*a[0]))
      items.push_back(v.is_string() ? markup_escape(v) : v);
    args.positional = {make_list(std::move(items))};
    args.keywords.clear();
  } else if (name != "split" && name != "rsplit" && name != "splitlines") {
    return std::nullopt;
  }
  return to_markup(str_method(in, self.str(), name, args));
}

Value dict_view(Interp& in, const DictData& d, ListKind kind) {
  in.check_items(d.size());
  std::vector<Value> out;
  out.reserve(d.size());
  for (const auto& [k, v] : d.items) {
    if (kind == ListKind::kDictKeys) {
      out.push_back(k);
    } else if (kind == ListKind::kDictValues) {
      out.push_back(v);
    } else {
      out.push_back(make_list({k, v}, ListKind::kTuple));
    }
  }
  return make_list(std::move(out), kind);
}

}  // namespace

std::optional<Value> find_method(Interp& /*in*/, const Value& self, std::string_view name) {
  switch (classify(self, name)) {
    case MethodKind::kNone:
      return std::nullopt;
    case MethodKind::kUnsafe:
      return Value::undefined(fmt::format("access to attribute {} of '{}' object is unsafe.",
                                          repr_str(name), self.type_name()));
    case MethodKind::kSafe:
      break;
  }
  return Value::object(std::make_shared<BoundMethod>(self, std::string(name)));
}

std::optional<Value> call_method(Interp& in, const Value& self, std::string_view name, Args& args) {
  if (classify(self, name) != MethodKind::kSafe) return std::nullopt;
  if (self.is_markup()) {
    if (auto r = markup_method(in, self, name, args)) return r;
  }
  if (self.is_string()) return str_method(in, self.str(), name, args);
  if (self.is_dict()) {
    const DictData& d = self.dict();
    if (name == "get") {
      const auto a = bind_args("get", args, {"key", "default"});
      if (!a[0]) fail("get expected at least 1 argument, got 0");
      require_hashable(*a[0]);
      if (const Value* v = d.find(*a[0])) return *v;
      return a[1] ? *a[1] : Value::none();
    }
    bind_args(name, args, {});
    if (name == "items") return dict_view(in, d, ListKind::kDictItems);
    if (name == "keys") return dict_view(in, d, ListKind::kDictKeys);
    if (name == "values") return dict_view(in, d, ListKind::kDictValues);
    if (name == "copy") return self;
    fail_kind(ErrorKind::kUnsupported, "dict.{}() is not supported", name);
  }
  // list / tuple
  const auto& items = self.list().items;
  if (name == "copy") {
    bind_args(name, args, {});
    return make_list(items, self.list().kind);
  }
  const auto a = bind_args(name, args, {"value"});
  if (!a[0]) fail("{}() takes exactly one argument (0 given)", name);
  int64_t count = 0;
  for (size_t k = 0; k < items.size(); ++k) {
    if (py_equal(items[k], *a[0])) {
      if (name == "index") return Value::integer(static_cast<int64_t>(k));
      ++count;
    }
  }
  if (name == "index") fail("{} is not in list", to_repr(*a[0]));
  return Value::integer(count);
}

std::vector<std::optional<Value>> bind_args(std::string_view function, Args& args,
                                            std::initializer_list<std::string_view> params) {
  std::vector<std::optional<Value>> out(params.size());
  if (args.positional.size() > params.size()) {
    fail("{}() takes at most {} argument(s) ({} given)", function, params.size(),
         args.positional.size());
  }
  for (size_t k = 0; k < args.positional.size(); ++k)
    out[k] = args.positional[k];
  for (auto& [key, value] : args.keywords) {
    const auto it = std::find(params.begin(), params.end(), key);
    if (it == params.end()) {
      fail("{}() got an unexpected keyword argument '{}'", function, key);
    }
    const auto idx = static_cast<size_t>(it - params.begin());
    if (out[idx]) fail("{}() got multiple values for argument '{}'", function, key);
    out[idx] = value;
  }
  return out;
}

}  // namespace pagoda::jinja
