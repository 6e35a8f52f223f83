// Globals of HF's Jinja environment (range with the sandbox's MAX_RANGE, dict, namespace,
// cycler, joiner, raise_exception, strftime_now) and json.dumps for the tojson filter.
#include <algorithm>
#include <cmath>
#include <ctime>

#include "jinja/interpreter.h"
#include "jinja/py_text.h"

namespace pagoda::jinja {

namespace {

constexpr int64_t kMaxRange = 100000;  // jinja2.sandbox.MAX_RANGE

class BuiltinFunction : public Object {
 public:
  using Fn = Value (*)(Interp&, Args&);
  BuiltinFunction(std::string_view name, Fn fn) : name_(name), fn_(fn) {}
  std::string_view type_name() const override { return "function"; }
  void repr(std::string& out, ReprState& /*state*/) const override {
    out += fmt::format("<function {}>", name_);
  }
  bool callable() const override { return true; }
  Value call(Interp& in, Args& args) override { return fn_(in, args); }

 private:
  std::string_view name_;
  Fn fn_;
};

class RangeObject : public Object {
 public:
  RangeObject(int64_t start, int64_t stop, int64_t step)
      : start_(start), stop_(stop), step_(step) {}
  std::string_view type_name() const override { return "range"; }
  void repr(std::string& out, ReprState& /*state*/) const override {
    out += step_ == 1 ? fmt::format("range({}, {})", start_, stop_)
                      : fmt::format("range({}, {}, {})", start_, stop_, step_);
  }
  bool truthy() const override { return size() > 0; }
  std::optional<Value> get_attr(std::string_view name, Interp& /*in*/) override {
    if (name == "start") return Value::integer(start_);
    if (name == "stop") return Value::integer(stop_);
    if (name == "step") return Value::integer(step_);
    return std::nullopt;
  }
  std::optional<std::vector<Value>> items(Interp& in) const override {
    const int64_t n = size();
    in.check_items(static_cast<size_t>(n));
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      // Modular uint64 arithmetic; the true value lies in [start, stop), so it is exact.
      const uint64_t v =
          static_cast<uint64_t>(start_) + static_cast<uint64_t>(k) * static_cast<uint64_t>(step_);
      out.push_back(Value::integer(static_cast<int64_t>(v)));
    }
    return out;
  }
  int64_t size() const {
    // Unsigned arithmetic: spans and steps near the int64 limits cannot overflow.
    uint64_t span = 0;
    uint64_t stride = 0;
    if (step_ > 0 && stop_ > start_) {
      span = static_cast<uint64_t>(stop_) - static_cast<uint64_t>(start_);
      stride = static_cast<uint64_t>(step_);
    } else if (step_ < 0 && start_ > stop_) {
      span = static_cast<uint64_t>(start_) - static_cast<uint64_t>(stop_);
      stride = 0 - static_cast<uint64_t>(step_);
    } else {
      return 0;
    }
    const uint64_t n = (span - 1) / stride + 1;
    return n > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(n);
  }

 private:
  int64_t start_, stop_, step_;
};

int64_t int_param(const Value& v) {
  if (!v.is_integral()) fail("'{}' object cannot be interpreted as an integer", v.type_name());
  return v.get_int();
}

Value g_range(Interp& /*in*/, Args& args) {
  if (!args.keywords.empty()) fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) fail("range expected at most 3 arguments, got {}", p.size());
  int64_t start = 0, stop = 0, step = 1;
  if (p.size() == 1) {
    stop = int_param(p[0]);
  } else {
    start = int_param(p[0]);
    stop = int_param(p[1]);
    if (p.size() == 3) step = int_param(p[2]);
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  auto range = std::make_shared<RangeObject>(start, stop, step);
  if (range->size() > kMaxRange) {
    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", kMaxRange);
  }
  return Value::object(std::move(range));
}

// dict(*args, **kwargs) semantics shared by dict() and namespace().
DictData build_dict(Interp& in, Args& args, std::string_view what) {
  DictData d;
  if (args.positional.size() > 1) {
    fail("{} expected at most 1 argument, got {}", what, args.positional.size());
  }
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    // dict(x) probes x.keys first, which an Undefined refuses.
    if (src.is_undefined()) fail("{}", src.undefined_message());
    if (src.is_dict()) {
      d = src.dict();
    } else {
      size_t index = 0;
      for (const Value& pair : in.iterate(src)) {
        const std::vector<Value> kv = in.iterate(pair);
        if (kv.size() != 2) {
          fail("dictionary update sequence element #{} has length {}; 2 is required", index,
               kv.size());
        }
        ++index;
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (auto& [k, v] : args.keywords)
    d.set(Value::string(k), v);
  in.check_items(d.size());
  return d;
}

Value g_dict(Interp& in, Args& args) {
  return make_dict(build_dict(in, args, "dict"));
}

Value g_namespace(Interp& in, Args& args) {
  return in.new_namespace(build_dict(in, args, "namespace"));
}

class Cycler : public Object, public std::enable_shared_from_this<Cycler> {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string_view type_name() const override { return "Cycler"; }
  std::string type_repr() const override { return "jinja2.utils.Cycler object"; }
  std::optional<Value> get_attr(std::string_view name, Interp& /*in*/) override;
  Value current() const { return items_[pos_]; }
  Value next() {
    Value v = items_[pos_];
    pos_ = (pos_ + 1) % items_.size();
    return v;
  }
  void reset() { pos_ = 0; }

 private:
  std::vector<Value> items_;
  size_t pos_ = 0;
};

class CyclerMethod : public Object {
 public:
  CyclerMethod(std::shared_ptr<Cycler> c, bool next) : c_(std::move(c)), next_(next) {}
  std::string_view type_name() const override { return "method"; }
  bool callable() const override { return true; }
  Value call(Interp& /*in*/, Args& /*args*/) override {
    if (next_) return c_->next();
    c_->reset();
    return Value::none();
  }

 private:
  std::shared_ptr<Cycler> c_;
  bool next_;
};

std::optional<Value> Cycler::get_attr(std::string_view name, Interp& /*in*/) {
  if (name == "current") return current();
  if (name == "next" || name == "reset") {
    return Value::object(std::make_shared<CyclerMethod>(shared_from_this(), name == "next"));
  }
  return std::nullopt;
}

Value g_cycler(Interp& in, Args& args) {
  if (args.positional.empty()) fail("at least one item has to be provided");
  in.check_items(args.positional.size());
  return Value::object(std::make_shared<Cycler>(args.positional));
}

class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string_view type_name() const override { return "Joiner"; }
  std::string type_repr() const override { return "jinja2.utils.Joiner object"; }
  bool callable() const override { return true; }
  Value call(Interp& /*in*/, Args& /*args*/) override {
    if (!used_) {
      used_ = true;
      return Value::string("");
    }
    return Value::string(sep_);
  }

 private:
  std::string sep_;
  bool used_ = false;
};

Value g_joiner(Interp& /*in*/, Args& args) {
  const auto a = bind_args("joiner", args, {"sep"});
  return Value::object(std::make_shared<Joiner>(a[0] ? to_str(*a[0]) : ", "));
}

Value g_raise_exception(Interp& /*in*/, Args& args) {
  const auto a = bind_args("raise_exception", args, {"message"});
  throw TemplateError{ErrorKind::kRaised, a[0] ? to_str(*a[0]) : std::string()};
}

Value g_strftime_now(Interp& in, Args& args) {
  const auto a = bind_args("strftime_now", args, {"format"});
  if (!a[0] || !a[0]->is_string()) fail("strftime() argument 1 must be str");
  const std::string& format = a[0]->str();
  in.check_string(format.size() * 16);
  const auto now = in.now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  localtime_r(&t, &tm);
  // Python handles %f itself, and %z/%Z are empty for the naive datetime.now().
  std::string c_format;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] == '%' && i + 1 < format.size()) {
      const char c = format[i + 1];
      ++i;
      if (c == 'f') {
        c_format += fmt::format("{:06d}", (micros + 1000000) % 1000000);
      } else if (c == 'z' || c == 'Z') {
        // empty
      } else {
        c_format += '%';
        c_format += c;
      }
    } else {
      c_format += format[i];
    }
  }
  std::string buf(c_format.size() * 32 + 256, '\0');
  const size_t n = std::strftime(buf.data(), buf.size(), c_format.c_str(), &tm);
  buf.resize(n);
  return in.make_string(std::move(buf));
}

Value g_lipsum(Interp& /*in*/, Args& /*args*/) {
  fail_kind(ErrorKind::kUnsupported, "lipsum() is not supported in chat templates");
}

}  // namespace

std::optional<Value> find_global(std::string_view name) {
  static constexpr struct {
    std::string_view name;
    BuiltinFunction::Fn fn;
  } kGlobals[] = {
      {"range", g_range},
      {"dict", g_dict},
      {"namespace", g_namespace},
      {"cycler", g_cycler},
      {"joiner", g_joiner},
      {"raise_exception", g_raise_exception},
      {"strftime_now", g_strftime_now},
      {"lipsum", g_lipsum},
  };
  for (const auto& g : kGlobals) {
    if (g.name == name) return Value::object(std::make_shared<BuiltinFunction>(g.name, g.fn));
  }
  return std::nullopt;
}

// ---- json.dumps

namespace {

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t c = decode_utf8(s, i);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c > 0xFFFF) {
        const char32_t v = c - 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        out += fmt::format("\\u{:04x}", static_cast<uint32_t>(c));
      }
    } else {
      out.append(s.substr(at, i - at));
    }
  }
  out += '"';
}

std::string json_float(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "Infinity" : "-Infinity";
  return py_float_repr(f);
}

void dump(Interp& in, std::string& out, const Value& v, const JsonOptions& o, int level) {
  if (level > static_cast<int>(kMaxDepth) + 8) {
    fail_kind(ErrorKind::kLimit, "values nested deeper than {} levels", kMaxDepth);
  }
  in.check_string(out.size());
  auto newline = [&](int lvl) {
    out += '\n';
    for (int k = 0; k < lvl; ++k)
      out += *o.indent;
  };
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.get_bool() ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(v.get_int());
      return;
    case Kind::kFloat:
      out += json_float(v.get_float());
      return;
    case Kind::kString:
      append_json_string(out, v.str(), o.ensure_ascii);
      return;
    case Kind::kList: {
      const ListData& l = v.list();
      if (l.kind != ListKind::kList && l.kind != ListKind::kTuple) break;
      if (l.items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < l.items.size(); ++k) {
        if (k > 0) out += o.item_separator;
        if (o.indent) newline(level + 1);
        dump(in, out, l.items[k], o, level + 1);
      }
      if (o.indent) newline(level);
      out += ']';
      return;
    }
    case Kind::kDict: {
      const DictData& d = v.dict();
      if (d.size() == 0) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : d.items)
        items.push_back(&kv);
      if (o.sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](const auto* x, const auto* y) { return py_less(x->first, y->first); });
      }
      out += '{';
      bool first = true;
      for (const auto* kv : items) {
        const Value& key = kv->first;
        std::string key_text;
        if (key.is_string()) {
          key_text = key.str();
        } else if (key.kind() == Kind::kFloat) {
          key_text = json_float(key.get_float());
        } else if (key.kind() == Kind::kBool) {
          key_text = key.get_bool() ? "true" : "false";
        } else if (key.kind() == Kind::kInt) {
          key_text = std::to_string(key.get_int());
        } else if (key.is_none()) {
          key_text = "null";
        } else {
          fail("keys must be str, int, float, bool or None, not {}", key.type_name());
        }
        if (!first) out += o.item_separator;
        first = false;
        if (o.indent) newline(level + 1);
        append_json_string(out, key_text, o.ensure_ascii);
        out += o.key_separator;
        dump(in, out, kv->second, o, level + 1);
      }
      if (o.indent) newline(level);
      out += '}';
      return;
    }
    default:
      break;
  }
  fail("Object of type {} is not JSON serializable", v.type_name());
}

}  // namespace

void append_json(Interp& in, std::string& out, const Value& v, const JsonOptions& options) {
  dump(in, out, v, options, 0);
  in.check_string(out.size());
}

}  // namespace pagoda::jinja
