// Interp: evaluates expressions and executes statements (see interpreter.h).
#include "jinja/interpreter.h"

#include <algorithm>

#include "jinja/py_text.h"
#include "jinja/template.h"

namespace pagoda::jinja {

namespace {

// Recursion budget for eval/exec frames (expressions, statements, macro calls together).
constexpr int kMaxEvalDepth = 500;

std::string repr_of(std::string_view s) {
  std::string out;
  append_py_repr(out, s);
  return out;
}

// A `{% for %}` loop's `loop` variable (jinja2.runtime.LoopContext).
class LoopObject : public Object, public std::enable_shared_from_this<LoopObject> {
 public:
  LoopObject(Value items, int depth0, const Stmt* stmt, const ScopePtr& scope)
      : items_(std::move(items)), depth0_(depth0), stmt_(stmt) {
    if (stmt->recursive) {
      scope_ = scope;
      scope->captured = true;
    }
  }

  std::string_view type_name() const override { return "LoopContext"; }
  std::string type_repr() const override { return "jinja2.runtime.LoopContext object"; }
  void repr(std::string& out, ReprState& /*state*/) const override {
    out += fmt::format("<LoopContext {}/{}>", index0 + 1, size());
  }
  bool callable() const override { return true; }

  std::optional<Value> get_attr(std::string_view name, Interp& in) override;
  Value call(Interp& in, Args& args) override {
    if (!stmt_->recursive) {
      fail("The loop must have the 'recursive' marker to be called recursively.");
    }
    if (args.positional.size() != 1 || !args.keywords.empty()) {
      fail("loop() takes exactly one argument");
    }
    ScopePtr scope = scope_.lock();
    return in.make_string(in.run_recursive_loop(*stmt_, scope, args.positional[0], depth0_ + 1));
  }

  size_t size() const { return items_.list().items.size(); }
  size_t index0 = 0;
  std::optional<Value> last_changed;

 private:
  Value items_;
  int depth0_;
  const Stmt* stmt_;
  std::weak_ptr<Scope> scope_;
};

// loop.cycle / loop.changed bound to their loop.
class LoopMethod : public Object {
 public:
  LoopMethod(std::shared_ptr<LoopObject> loop, bool cycle)
      : loop_(std::move(loop)), cycle_(cycle) {}
  std::string_view type_name() const override { return "method"; }
  bool callable() const override { return true; }
  Value call(Interp& in, Args& args) override {
    if (cycle_) {
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[loop_->index0 % args.positional.size()];
    }
    in.check_items(args.positional.size());
    Value value = make_list(args.positional, ListKind::kTuple);
    if (loop_->last_changed && py_equal(*loop_->last_changed, value)) return Value::boolean(false);
    loop_->last_changed = std::move(value);
    return Value::boolean(true);
  }

 private:
  std::shared_ptr<LoopObject> loop_;
  bool cycle_;
};

std::optional<Value> LoopObject::get_attr(std::string_view name, Interp& /*in*/) {
  const auto n = static_cast<int64_t>(size());
  const auto i = static_cast<int64_t>(index0);
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(depth0_ + 1);
  if (name == "depth0") return Value::integer(depth0_);
  const auto& items = items_.list().items;
  if (name == "previtem") {
    if (i == 0) return Value::undefined("there is no previous item");
    return items[index0 - 1];
  }
  if (name == "nextitem") {
    if (i + 1 >= n) return Value::undefined("there is no next item");
    return items[index0 + 1];
  }
  if (name == "cycle" || name == "changed") {
    return Value::object(std::make_shared<LoopMethod>(shared_from_this(), name == "cycle"));
  }
  return std::nullopt;
}

// A {% macro %} (or the `caller` of a {% call %} block) closed over its defining scope.
class MacroObject : public Object {
 public:
  MacroObject(const Stmt* def, const ScopePtr& closure, std::string name)
      : def_(def), closure_(closure), name_(std::move(name)) {
    closure->captured = true;
  }
  std::string_view type_name() const override { return "Macro"; }
  std::string type_repr() const override { return "jinja2.runtime.Macro object"; }
  void repr(std::string& out, ReprState& /*state*/) const override {
    out += "<Macro ";
    append_py_repr(out, name_);
    out += '>';
  }
  bool callable() const override { return true; }
  Value call(Interp& in, Args& args) override {
    return in.make_string(in.call_macro(*def_, *def_->signature, closure_.lock(), args));
  }
  std::optional<Value> get_attr(std::string_view name, Interp& in) override {
    const Signature& sig = *def_->signature;
    if (name == "name") return Value::string(name_);
    if (name == "arguments") {
      std::vector<Value> names;
      for (const auto& p : sig.param_names)
        names.push_back(Value::string(p));
      in.check_items(names.size());
      return make_list(std::move(names), ListKind::kTuple);
    }
    if (name == "catch_kwargs") return Value::boolean(sig.catch_kwargs);
    if (name == "catch_varargs") return Value::boolean(sig.catch_varargs);
    if (name == "caller") return Value::boolean(sig.uses_caller);
    return std::nullopt;
  }

 private:
  const Stmt* def_;
  std::weak_ptr<Scope> closure_;
  std::string name_;
};

}  // namespace

Interp::Interp(const Template& tmpl, const RenderLimits& limits)
    : tmpl_(tmpl), limits_(limits), now_(limits.now) {
  max_items_ = std::max<size_t>(1024, limits_.max_output_bytes / 8);
}

Interp::~Interp() {
  // Namespaces are the only mutable values, hence the only way to form reference cycles.
  for (auto& ns : namespaces_) {
    if (DictData* attrs = ns->attributes()) attrs->clear();
  }
}

Interp::DepthGuard::DepthGuard(Interp& in) : in_(in) {
  if (++in_.depth_ > kMaxEvalDepth) {
    --in_.depth_;
    fail_kind(ErrorKind::kLimit, "template recursion deeper than {} levels", kMaxEvalDepth);
  }
}

void Interp::fail_steps() const {
  fail_kind(ErrorKind::kLimit, "chat template exceeded its limit of {} steps", limits_.max_steps);
}

void Interp::check_string(size_t bytes) {
  if (bytes > limits_.max_output_bytes) {
    fail_kind(ErrorKind::kLimit, "a string of {} bytes exceeds the {}-byte output limit", bytes,
              limits_.max_output_bytes);
  }
  step(bytes / 16);
}

void Interp::check_items(size_t count) {
  if (count > max_items_) {
    fail_kind(ErrorKind::kLimit, "a collection of {} items exceeds the limit of {}", count,
              max_items_);
  }
  step(count);
}

void Interp::emit(std::string& out, std::string_view text) {
  if (out.size() + text.size() > limits_.max_output_bytes) {
    fail_kind(ErrorKind::kLimit, "chat template output exceeds {} bytes", limits_.max_output_bytes);
  }
  step(text.size() / 64);
  out.append(text);
}

std::chrono::system_clock::time_point Interp::now() const {
  if (!now_) now_ = std::chrono::system_clock::now();
  return *now_;
}

Value Interp::new_namespace(DictData attrs) {
  class NamespaceObject : public Object {
   public:
    explicit NamespaceObject(DictData attrs) : attrs_(std::move(attrs)) {}
    std::string_view type_name() const override { return "Namespace"; }
    std::string type_repr() const override { return "jinja2.utils.Namespace object"; }
    void repr(std::string& out, ReprState& state) const override {
      out += "<Namespace ";
      if (std::find(state.active.begin(), state.active.end(), this) != state.active.end()) {
        out += "{...}>";
        return;
      }
      state.active.push_back(this);
      append_repr(out, Value::dict(std::make_shared<DictData>(attrs_)), state);
      state.active.pop_back();
      out += '>';
    }
    std::optional<Value> get_attr(std::string_view name, Interp& /*in*/) override {
      if (const Value* v = attrs_.find(name)) return *v;
      return std::nullopt;
    }
    DictData* attributes() override { return &attrs_; }

   private:
    DictData attrs_;
  };
  step(attrs.size() + 1);
  auto ns = std::make_shared<NamespaceObject>(std::move(attrs));
  namespaces_.push_back(ns);
  return Value::object(std::move(ns));
}

std::string Interp::render(const DictData& context) {
  root_ = std::make_shared<Scope>(nullptr);
  for (const auto& [k, v] : context.items) {
    if (!k.is_string()) continue;
    if (const auto id = tmpl_.id_of(k.str())) root_->set(*id, v);
  }
  std::string out;
  exec_body(tmpl_.body(), root_, out);
  return out;
}

Value Interp::lookup(NameId id, const Scope& scope) const {
  if (const Value* v = scope.find(id)) return *v;
  if (const Value* g = tmpl_.global(id)) return *g;
  return Value::undefined(fmt::format("'{}' is undefined", tmpl_.names()[id]));
}

// ---- lookups

std::string Interp::type_repr(const Value& obj) {
  if (obj.is_none()) return "None";
  if (obj.is_object()) return obj.object().type_repr();
  return std::string(obj.type_name()) + " object";
}

Value Interp::undefined_attr(const Value& obj, std::string_view name) {
  if (name.size() > 1 && name[0] == '_' && name[1] == '_') {
    return Value::undefined(fmt::format("access to attribute {} of '{}' object is unsafe.",
                                        repr_of(name), obj.type_name()));
  }
  return Value::undefined(
      fmt::format("{} has no attribute {}", repr_of(type_repr(obj)), repr_of(name)));
}

Value Interp::get_attr(const Value& obj, std::string_view name) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail("{}", obj.undefined_message());
    case Kind::kString:
    case Kind::kList:
    case Kind::kDict:
      if (auto m = find_method(*this, obj, name)) return *m;
      if (obj.is_dict() && !(name.size() > 1 && name[0] == '_' && name[1] == '_')) {
        if (const Value* v = obj.dict().find(name)) return *v;
      }
      return undefined_attr(obj, name);
    case Kind::kObject:
      if (auto v = obj.object().get_attr(name, *this)) return *v;
      return undefined_attr(obj, name);
    default:
      return undefined_attr(obj, name);
  }
}

namespace {

// Python index normalisation; nullopt when out of range.
std::optional<size_t> normalize_index(int64_t i, size_t size) {
  const auto n = static_cast<int64_t>(size);
  if (i < 0) i += n;
  if (i < 0 || i >= n) return std::nullopt;
  return static_cast<size_t>(i);
}

}  // namespace

Value Interp::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail("{}", obj.undefined_message());
  // obj[key]
  switch (obj.kind()) {
    case Kind::kList: {
      const ListData& l = obj.list();
      if ((l.kind == ListKind::kList || l.kind == ListKind::kTuple) && key.is_integral()) {
        if (auto i = normalize_index(key.get_int(), l.items.size())) return l.items[*i];
      }
      break;
    }
    case Kind::kString:
      if (key.is_integral()) {
        const std::string& s = obj.str();
        if (is_ascii(s)) {
          if (auto i = normalize_index(key.get_int(), s.size())) {
            return obj.same_flavour(std::string(1, s[*i]));
          }
        } else {
          const std::u32string cps = to_code_points(s);
          if (auto i = normalize_index(key.get_int(), cps.size())) {
            std::string ch;
            append_utf8(ch, cps[*i]);
            return obj.same_flavour(std::move(ch));
          }
        }
      }
      break;
    case Kind::kDict: {
      const bool hashable = !key.is_list() || key.list().kind == ListKind::kTuple ||
                            key.list().kind == ListKind::kGenerator;
      if (hashable && !key.is_dict()) {
        if (const Value* v = obj.dict().find(key)) return *v;
      }
      break;
    }
    case Kind::kObject:
      if (key.is_string() && obj.object().attributes() != nullptr) {
        // Namespace has no __getitem__; getattr finds its attributes.
        if (auto v = obj.object().get_attr(key.str(), *this)) return *v;
      }
      break;
    default:
      break;
  }
  // Fall back to the attribute, as the sandbox's getitem does.
  if (key.is_string()) {
    const std::string& name = key.str();
    if (obj.is_string() || obj.is_list() || obj.is_dict()) {
      if (auto m = find_method(*this, obj, name)) return *m;
    } else if (obj.is_object()) {
      if (auto v = obj.object().get_attr(name, *this)) return *v;
    }
    return undefined_attr(obj, name);
  }
  return Value::undefined(fmt::format("{} has no element {}", type_repr(obj), to_repr(key)));
}

Value Interp::slice(const Value& obj, const Value& start, const Value& stop, const Value& stride) {
  if (obj.is_undefined()) fail("{}", obj.undefined_message());
  auto index_ok = [](const Value& v) { return v.is_none() || v.is_integral(); };
  const bool sliceable =
      obj.is_string() || (obj.is_list() && (obj.list().kind == ListKind::kList ||
                                            obj.list().kind == ListKind::kTuple));
  // Jinja compiles slices to a plain obj[a:b:c], bypassing the sandbox's getitem, so
  // Python's errors propagate.
  if (!sliceable) {
    if (obj.is_dict()) fail("unhashable type: 'slice'");
    fail("'{}' object is not subscriptable", obj.type_name());
  }
  if (!index_ok(start) || !index_ok(stop) || !index_ok(stride)) {
    fail("slice indices must be integers or None or have an __index__ method");
  }
  const int64_t st = stride.is_none() ? 1 : stride.get_int();
  if (st == 0) fail("slice step cannot be zero");
  std::u32string cps;
  const bool ascii = obj.is_string() && is_ascii(obj.str());
  if (obj.is_string() && !ascii) cps = to_code_points(obj.str());
  const int64_t len = static_cast<int64_t>(obj.is_list() ? obj.list().items.size()
                                                         : (ascii ? obj.str().size() : cps.size()));
  // PySlice_AdjustIndices
  auto adjust = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t i = v.get_int();
    if (i < 0) {
      i = i < -len ? (st < 0 ? -1 : 0) : i + len;
    } else if (i >= len) {
      i = st < 0 ? len - 1 : len;
    }
    return i;
  };
  const int64_t b = adjust(start, st < 0 ? len - 1 : 0);
  const int64_t e = adjust(stop, st < 0 ? -1 : len);
  int64_t count = 0;
  if (st < 0) {
    if (e < b) count = (b - e - 1) / (-st) + 1;
  } else if (b < e) {
    count = (e - b - 1) / st + 1;
  }
  check_items(static_cast<size_t>(count));
  if (obj.is_list()) {
    std::vector<Value> out;
    out.reserve(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) {
      out.push_back(obj.list().items[static_cast<size_t>(b + k * st)]);
    }
    return make_list(std::move(out), obj.list().kind);
  }
  std::string out;
  for (int64_t k = 0; k < count; ++k) {
    const int64_t i = b + k * st;  // within [0, len) for k < count: no overflow
    if (ascii) {
      out += obj.str()[static_cast<size_t>(i)];
    } else {
      append_utf8(out, cps[static_cast<size_t>(i)]);
    }
  }
  check_string(out.size());
  return obj.same_flavour(std::move(out));
}

Value Interp::call(const Value& callee, Args& args) {
  if (callee.is_undefined()) fail("{}", callee.undefined_message());
  if (callee.is_object() && callee.object().callable()) return callee.object().call(*this, args);
  fail("'{}' object is not callable", callee.type_name());
}

std::vector<Value> Interp::iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kString: {
      const std::string& s = v.str();
      std::vector<Value> out;
      check_items(s.size());
      for (size_t i = 0; i < s.size();) {
        const size_t at = i;
        decode_utf8(s, i);
        out.push_back(Value::string(s.substr(at, i - at)));
      }
      return out;
    }
    case Kind::kList: {
      const ListData& l = v.list();
      step(l.items.size());
      if (l.kind == ListKind::kGenerator) {
        std::vector<Value> out(l.items.begin() + static_cast<std::ptrdiff_t>(l.consumed),
                               l.items.end());
        l.consumed = l.items.size();
        if (l.error) throw *l.error;
        return out;
      }
      return l.items;
    }
    case Kind::kDict: {
      std::vector<Value> out;
      step(v.dict().size());
      for (const auto& [k, val] : v.dict().items)
        out.push_back(k);
      return out;
    }
    case Kind::kObject:
      if (auto items = v.object().items(*this)) return std::move(*items);
      break;
    default:
      break;
  }
  fail("'{}' object is not iterable", v.type_name());
}

Value Interp::apply_filter(std::string_view name, const Value& v, Args& args) {
  const FilterFn f = find_filter(name);
  if (f == nullptr) fail("No filter named '{}'.", name);
  return f(*this, v, args);
}

bool Interp::apply_test(std::string_view name, const Value& v, Args& args) {
  const TestFn t = find_test(name);
  if (t == nullptr) fail("No test named '{}'.", name);
  return t(*this, v, args);
}

// ---- expressions

Value Interp::eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard guard(*this);
  step();
  line_ = e.line;
  switch (e.kind) {
    case ExprKind::kConst:
      return e.value;
    case ExprKind::kName:
      return lookup(e.id, *scope);
    case ExprKind::kGetAttr:
      return get_attr(eval(*e.a, scope), e.name);
    case ExprKind::kGetItem:
      return eval_get_item(e, scope);
    case ExprKind::kSlice:
      fail("slice outside of a subscript");
    case ExprKind::kCall:
      return eval_call(e, scope);
    case ExprKind::kFilter:
      return eval_filter(e, scope, nullptr);
    case ExprKind::kTest:
      return eval_test(e, scope);
    case ExprKind::kNeg:
    case ExprKind::kPos: {
      const Value v = eval(*e.a, scope);
      if (v.is_undefined()) fail("{}", v.undefined_message());
      if (v.is_integral()) {
        if (e.kind == ExprKind::kPos) return Value::integer(v.get_int());
        if (v.get_int() == INT64_MIN) fail_kind(ErrorKind::kUnsupported, "integer overflow");
        return Value::integer(-v.get_int());
      }
      if (v.kind() == Kind::kFloat) {
        return Value::number(e.kind == ExprKind::kNeg ? -v.get_float() : v.get_float());
      }
      fail("bad operand type for unary {}: '{}'", e.kind == ExprKind::kNeg ? '-' : '+',
           v.type_name());
    }
    case ExprKind::kNot:
      return Value::boolean(!eval(*e.a, scope).truthy());
    case ExprKind::kBinary: {
      const Value a = eval(*e.a, scope);
      const Value b = eval(*e.b, scope);
      line_ = e.line;
      return binary_op(*this, e.op, a, b);
    }
    case ExprKind::kAnd: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? eval(*e.b, scope) : a;
    }
    case ExprKind::kOr: {
      Value a = eval(*e.a, scope);
      return a.truthy() ? a : eval(*e.b, scope);
    }
    case ExprKind::kCompare:
      return eval_compare(e, scope);
    case ExprKind::kCondExpr:
      if (eval(*e.b, scope).truthy()) return eval(*e.a, scope);
      if (e.c) return eval(*e.c, scope);
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was "
          "defined.",
          e.line));
    case ExprKind::kConcat: {
      std::string out;
      for (const auto& item : e.items) {
        append_str(out, eval(*item, scope));
        check_string(out.size());
      }
      return Value::string(std::move(out));
    }
    case ExprKind::kList:
    case ExprKind::kTuple:
    case ExprKind::kDict:
      return eval_collection(e, scope);
  }
  fail("unknown expression");
}

Value Interp::eval_collection(const Expr& e, const ScopePtr& scope) {
  if (e.kind == ExprKind::kDict) {
    DictData d;
    for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
      Value key = eval(*e.items[k], scope);
      Value val = eval(*e.items[k + 1], scope);
      d.set(std::move(key), std::move(val));
    }
    return make_dict(std::move(d));
  }
  std::vector<Value> items;
  items.reserve(e.items.size());
  for (const auto& item : e.items)
    items.push_back(eval(*item, scope));
  return make_list(std::move(items),
                   e.kind == ExprKind::kTuple ? ListKind::kTuple : ListKind::kList);
}

Value Interp::eval_get_item(const Expr& e, const ScopePtr& scope) {
  const Value obj = eval(*e.a, scope);
  const Expr& index = *e.b;
  if (index.kind == ExprKind::kSlice) {
    const Value start = index.a ? eval(*index.a, scope) : Value::none();
    const Value stop = index.b ? eval(*index.b, scope) : Value::none();
    const Value stride = index.c ? eval(*index.c, scope) : Value::none();
    line_ = e.line;
    return slice(obj, start, stop, stride);
  }
  const Value key = eval(index, scope);
  line_ = e.line;
  return get_item(obj, key);
}

Args Interp::eval_args(const CallArgs& call, const ScopePtr& scope) {
  Args args;
  for (const auto& p : call.positional)
    args.positional.push_back(eval(*p, scope));
  for (const auto& [k, v] : call.keywords)
    args.keywords.emplace_back(k, eval(*v, scope));
  if (call.star_args) {
    const Value star = eval(*call.star_args, scope);
    if (star.is_none() || star.is_number()) {
      fail("Value after * must be an iterable, not {}", star.type_name());
    }
    for (Value& v : iterate(star))
      args.positional.push_back(std::move(v));
  }
  if (call.star_kwargs) {
    const Value kw = eval(*call.star_kwargs, scope);
    if (!kw.is_dict()) fail("argument after ** must be a mapping, not {}", kw.type_name());
    for (const auto& [k, v] : kw.dict().items) {
      if (!k.is_string()) fail("keywords must be strings");
      args.keywords.emplace_back(k.str(), v);
    }
  }
  std::vector<std::string_view> seen;
  for (const auto& [k, v] : args.keywords) {
    if (std::find(seen.begin(), seen.end(), k) != seen.end()) {
      fail("got multiple values for keyword argument '{}'", k);
    }
    seen.push_back(k);
  }
  return args;
}

Value Interp::eval_call(const Expr& e, const ScopePtr& scope) {
  const Expr& callee = *e.a;
  if (callee.kind == ExprKind::kGetAttr) {
    // obj.method(...) without materialising a bound method.
    const Value obj = eval(*callee.a, scope);
    if (obj.is_string() || obj.is_list() || obj.is_dict()) {
      Args args = eval_args(e.args, scope);
      line_ = e.line;
      if (auto r = call_method(*this, obj, callee.name, args)) return std::move(*r);
      return call(get_attr(obj, callee.name), args);
    }
    const Value f = get_attr(obj, callee.name);
    Args args = eval_args(e.args, scope);
    line_ = e.line;
    return call(f, args);
  }
  const Value f = eval(callee, scope);
  Args args = eval_args(e.args, scope);
  line_ = e.line;
  return call(f, args);
}

Value Interp::eval_filter(const Expr& e, const ScopePtr& scope, const Value* injected) {
  Value subject;
  if (e.a == nullptr) {
    subject = *injected;
  } else if (injected != nullptr && e.a->kind == ExprKind::kFilter) {
    subject = eval_filter(*e.a, scope, injected);
  } else {
    subject = eval(*e.a, scope);
  }
  Args args = eval_args(e.args, scope);
  line_ = e.line;
  if (e.filter == nullptr) fail("No filter named '{}' found.", e.name);
  return e.filter(*this, subject, args);
}

Value Interp::eval_test(const Expr& e, const ScopePtr& scope) {
  const Value subject = eval(*e.a, scope);
  Args args = eval_args(e.args, scope);
  line_ = e.line;
  if (e.test == nullptr) fail("No test named '{}' found.", e.name);
  return Value::boolean(e.test(*this, subject, args));
}

Value Interp::eval_compare(const Expr& e, const ScopePtr& scope) {
  Value left = eval(*e.a, scope);
  for (const auto& [op, expr] : e.comparisons) {
    Value right = eval(*expr, scope);
    line_ = e.line;
    bool r = false;
    if (op == "==") {
      r = py_equal(left, right);
    } else if (op == "!=") {
      r = !py_equal(left, right);
    } else if (op == "in") {
      r = contains(*this, right, left);
    } else if (op == "notin") {
      r = !contains(*this, right, left);
    } else {
      r = py_compare(left, right, op);
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

// ---- statements

void Interp::assign(const Target& t, const Value& v, const ScopePtr& scope) {
  switch (t.kind) {
    case Target::Kind::kName:
      scope->set(t.id, v);
      return;
    case Target::Kind::kTuple: {
      std::vector<Value> items = iterate(v);
      if (items.size() < t.items.size()) {
        fail("not enough values to unpack (expected {}, got {})", t.items.size(), items.size());
      }
      if (items.size() > t.items.size()) {
        fail("too many values to unpack (expected {})", t.items.size());
      }
      for (size_t k = 0; k < items.size(); ++k)
        assign(t.items[k], items[k], scope);
      return;
    }
    case Target::Kind::kNamespaceAttr: {
      const Value ns = lookup(t.id, *scope);
      DictData* attrs = ns.is_object() ? ns.object().attributes() : nullptr;
      if (attrs == nullptr) fail("cannot assign attribute on non-namespace object");
      attrs->set(Value::string(t.attr), v);
      return;
    }
  }
}

Interp::Flow Interp::exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
  for (const auto& s : body) {
    const Flow f = exec(*s, scope, out);
    if (f != Flow::kNormal) return f;
  }
  return Flow::kNormal;
}

Interp::Flow Interp::exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
  DepthGuard guard(*this);
  step();
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::kData:
      emit(out, s.text);
      return Flow::kNormal;
    case StmtKind::kPrint:
      for (const auto& e : s.exprs) {
        const Value v = eval(*e, scope);
        if (v.is_string()) {
          emit(out, v.str());
        } else {
          std::string text;
          append_str(text, v);
          emit(out, text);
        }
      }
      return Flow::kNormal;
    case StmtKind::kIf:
      for (size_t k = 0; k < s.exprs.size(); ++k) {
        if (eval(*s.exprs[k], scope).truthy()) return exec_body(s.bodies[k], scope, out);
      }
      if (s.has_else) return exec_body(s.else_body, scope, out);
      return Flow::kNormal;
    case StmtKind::kFor:
      return exec_for(s, scope, out);
    case StmtKind::kSet:
      if (s.target.kind == Target::Kind::kNamespaceAttr) {
        // Jinja checks the namespace before it evaluates the value.
        const Value ns = lookup(s.target.id, *scope);
        if (!ns.is_object() || ns.object().attributes() == nullptr) {
          fail("cannot assign attribute on non-namespace object");
        }
      }
      assign(s.target, eval(*s.expr, scope), scope);
      return Flow::kNormal;
    case StmtKind::kSetBlock:
    case StmtKind::kFilterBlock: {
      std::string buffer;
      exec_body(s.body, std::make_shared<Scope>(scope), buffer);
      Value v = Value::string(std::move(buffer));
      if (s.expr) v = eval_filter(*s.expr, scope, &v);
      if (s.kind == StmtKind::kSetBlock) {
        assign(s.target, v, scope);
      } else {
        emit(out, to_str(v));
      }
      return Flow::kNormal;
    }
    case StmtKind::kMacro:
      scope->set(s.macro_id, Value::object(std::make_shared<MacroObject>(&s, scope, s.macro_name)));
      return Flow::kNormal;
    case StmtKind::kCallBlock:
      exec_call_block(s, scope, out);
      return Flow::kNormal;
    case StmtKind::kWith: {
      std::vector<Value> values;
      for (const auto& [target, expr] : s.assigns)
        values.push_back(eval(*expr, scope));
      auto child = std::make_shared<Scope>(scope);
      for (size_t k = 0; k < values.size(); ++k)
        assign(s.assigns[k].first, values[k], child);
      return exec_body(s.body, child, out);
    }
    case StmtKind::kBreak:
      return Flow::kBreak;
    case StmtKind::kContinue:
      return Flow::kContinue;
    case StmtKind::kScopedBody:
      exec_body(s.body, std::make_shared<Scope>(scope), out);
      return Flow::kNormal;
  }
  return Flow::kNormal;
}

Interp::Flow Interp::exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
  const Value iterable = eval(*s.expr, scope);
  run_for(s, scope, iterable, 0, out);
  return Flow::kNormal;
}

void Interp::run_for(const Stmt& s, const ScopePtr& scope, const Value& iterable, int depth,
                     std::string& out) {
  std::vector<Value> items = iterate(iterable);
  if (s.filter) {
    std::vector<Value> kept;
    for (Value& item : items) {
      auto probe = std::make_shared<Scope>(scope);
      assign(s.target, item, probe);
      if (eval(*s.filter, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    if (s.has_else) exec_body(s.else_body, std::make_shared<Scope>(scope), out);
    return;
  }
  const size_t n = items.size();
  const Value list = make_list(std::move(items));
  const auto& all = list.list().items;
  const std::optional<NameId> loop_id = tmpl_.loop_id();
  std::shared_ptr<LoopObject> loop;
  Value loop_value;
  if (loop_id) {
    loop = std::make_shared<LoopObject>(list, depth, &s, scope);
    loop_value = Value::object(loop);
  }
  ScopePtr iter_scope;
  for (size_t i = 0; i < n; ++i) {
    step();
    if (iter_scope == nullptr || iter_scope->captured || iter_scope.use_count() > 1) {
      iter_scope = std::make_shared<Scope>(scope);
    } else {
      iter_scope->vars.clear();
    }
    assign(s.target, all[i], iter_scope);
    if (loop) {
      loop->index0 = i;
      iter_scope->set(*loop_id, loop_value);
    }
    if (exec_body(s.body, iter_scope, out) == Flow::kBreak) break;
  }
}

std::string Interp::run_recursive_loop(const Stmt& loop, const ScopePtr& scope,
                                       const Value& iterable, int depth) {
  std::string out;
  run_for(loop, scope ? scope : root_, iterable, depth, out);
  return out;
}

std::string Interp::call_macro(const Stmt& def, const Signature& sig, const ScopePtr& closure,
                               Args& args) {
  DepthGuard guard(*this);
  auto scope = std::make_shared<Scope>(closure ? closure : root_);
  const size_t n = sig.params.size();
  const std::string name = def.kind == StmtKind::kMacro ? def.macro_name : "caller";
  const size_t npos = std::min(args.positional.size(), n);
  std::vector<std::optional<Value>> values(n);
  for (size_t i = 0; i < npos; ++i)
    values[i] = args.positional[i];
  auto kwargs = args.keywords;
  auto pop_kwarg = [&](std::string_view key) -> std::optional<Value> {
    for (auto it = kwargs.begin(); it != kwargs.end(); ++it) {
      if (it->first == key) {
        Value v = std::move(it->second);
        kwargs.erase(it);
        return v;
      }
    }
    return std::nullopt;
  };
  bool found_caller = false;
  if (npos != n) {
    for (size_t i = npos; i < n; ++i) {
      values[i] = pop_kwarg(sig.param_names[i]);
      if (sig.param_names[i] == "caller") found_caller = true;
    }
  } else {
    found_caller = std::find(sig.param_names.begin(), sig.param_names.end(), "caller") !=
                   sig.param_names.end();
  }
  if (sig.uses_caller && !found_caller) {
    const std::optional<Value> c = pop_kwarg("caller");
    if (const auto id = tmpl_.caller_id()) {
      scope->set(*id, c ? *c : Value::undefined("No caller defined"));
    }
  }
  if (sig.catch_kwargs) {
    DictData d;
    for (auto& [k, v] : kwargs)
      d.set(Value::string(k), std::move(v));
    if (const auto id = tmpl_.kwargs_id()) scope->set(*id, make_dict(std::move(d)));
  } else if (!kwargs.empty()) {
    for (const auto& [k, v] : kwargs) {
      if (k == "caller") {
        fail(
            "macro '{}' was invoked with two values for the special caller argument. This is "
            "most likely a bug.",
            name);
      }
    }
    fail("macro '{}' takes no keyword argument '{}'", name, kwargs.front().first);
  }
  if (sig.catch_varargs) {
    std::vector<Value> rest(args.positional.begin() + static_cast<std::ptrdiff_t>(npos),
                            args.positional.end());
    if (const auto id = tmpl_.varargs_id()) {
      scope->set(*id, make_list(std::move(rest), ListKind::kTuple));
    }
  } else if (args.positional.size() > n) {
    fail("macro '{}' takes not more than {} argument(s)", name, n);
  }
  const size_t first_default = n - sig.defaults.size();
  for (size_t i = 0; i < n; ++i) {
    if (values[i]) {
      scope->set(sig.params[i], std::move(*values[i]));
    } else if (i >= first_default) {
      scope->set(sig.params[i], eval(*sig.defaults[i - first_default], scope));
    } else {
      scope->set(sig.params[i], Value::undefined(fmt::format("parameter '{}' was not provided",
                                                             sig.param_names[i])));
    }
  }
  std::string out;
  exec_body(def.body, scope, out);
  return out;
}

void Interp::exec_call_block(const Stmt& s, const ScopePtr& scope, std::string& out) {
  const Value caller = Value::object(std::make_shared<MacroObject>(&s, scope, "caller"));
  const Expr& call_expr = *s.expr;
  const Value f = eval(*call_expr.a, scope);
  Args args = eval_args(call_expr.args, scope);
  args.keywords.emplace_back("caller", caller);
  line_ = s.line;
  const Value result = call(f, args);
  emit(out, to_str(result));
}

}  // namespace pagoda::jinja
