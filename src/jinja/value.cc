// Value: Python object semantics for the Jinja interpreter (see value.h).
#include "jinja/value.h"

#include <algorithm>
#include <cmath>

#include "jinja/py_text.h"

namespace pagoda::jinja {

Value Value::string(std::string s) {
  Value v(Kind::kString);
  v.ptr_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::string(std::shared_ptr<const std::string> s) {
  Value v(Kind::kString);
  v.ptr_ = std::move(s);
  return v;
}

Value Value::undefined(std::string message) {
  Value v(Kind::kUndefined);
  v.ptr_ = std::make_shared<const std::string>(std::move(message));
  return v;
}

Value Value::list(std::shared_ptr<ListData> data) {
  Value v(Kind::kList);
  v.ptr_ = std::move(data);
  return v;
}

Value Value::dict(std::shared_ptr<DictData> data) {
  Value v(Kind::kDict);
  v.ptr_ = std::move(data);
  return v;
}

Value Value::object(std::shared_ptr<Object> obj) {
  Value v(Kind::kObject);
  v.ptr_ = std::move(obj);
  return v;
}

std::shared_ptr<Object> Value::object_ptr() const {
  return std::const_pointer_cast<Object>(std::static_pointer_cast<const Object>(ptr_));
}

std::string Value::undefined_message() const {
  if (ptr_ == nullptr) return "undefined value";
  return *static_cast<const std::string*>(ptr_.get());
}

uint32_t Value::depth() const {
  if (kind_ == Kind::kList) return list().depth;
  if (kind_ == Kind::kDict) return dict().depth;
  return 0;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return b_;
    case Kind::kInt:
      return i_ != 0;
    case Kind::kFloat:
      return f_ != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return list().kind == ListKind::kGenerator || !list().items.empty();
    case Kind::kDict:
      return dict().size() != 0;
    case Kind::kObject:
      return object().truthy();
  }
  return false;
}

std::string_view Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return markup_ ? "Markup" : "str";
    case Kind::kList:
      switch (list().kind) {
        case ListKind::kList:
          return "list";
        case ListKind::kTuple:
          return "tuple";
        case ListKind::kGenerator:
          return "generator";
        case ListKind::kDictKeys:
          return "dict_keys";
        case ListKind::kDictValues:
          return "dict_values";
        case ListKind::kDictItems:
          return "dict_items";
      }
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kObject:
      return object().type_name();
  }
  return "object";
}

// ---- DictData

namespace {
constexpr size_t kIndexThreshold = 8;
}

const Value* DictData::find(std::string_view key) const {
  if (!index_.empty()) {
    const auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &items[it->second].second;
  }
  for (const auto& [k, v] : items) {
    if (k.is_string() && k.str() == key) return &v;
  }
  return nullptr;
}

const Value* DictData::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  for (const auto& [k, v] : items) {
    if (!k.is_string() && py_equal(k, key)) return &v;
  }
  return nullptr;
}

void DictData::set(Value key, Value value) {
  require_hashable(key);
  if (const Value* existing = find(key)) {
    *const_cast<Value*>(existing) = std::move(value);
    return;
  }
  items.emplace_back(std::move(key), std::move(value));
  if (!index_.empty()) {
    if (items.back().first.is_string()) {
      index_.emplace(items.back().first.str(), static_cast<uint32_t>(items.size() - 1));
    }
  } else if (items.size() > kIndexThreshold) {
    for (size_t k = 0; k < items.size(); ++k) {
      if (items[k].first.is_string()) index_.emplace(items[k].first.str(), k);
    }
  }
}

// ---- Object defaults

void Object::repr(std::string& out, ReprState& /*state*/) const {
  out += '<';
  out += type_name();
  out += " object>";
}

std::optional<Value> Object::get_attr(std::string_view /*name*/, Interp& /*in*/) {
  return std::nullopt;
}

Value Object::call(Interp& /*in*/, Args& /*args*/) {
  fail("'{}' object is not callable", type_name());
}

std::optional<std::vector<Value>> Object::items(Interp& /*in*/) const {
  return std::nullopt;
}

// ---- builders

Value make_list(std::vector<Value> items, ListKind kind) {
  uint32_t depth = 0;
  for (const Value& v : items)
    depth = std::max(depth, v.depth());
  if (depth + 1 > kMaxDepth) {
    fail_kind(ErrorKind::kLimit, "values nested deeper than {} levels", kMaxDepth);
  }
  auto data = std::make_shared<ListData>();
  data->items = std::move(items);
  data->kind = kind;
  data->depth = depth + 1;
  return Value::list(std::move(data));
}

Value make_dict(DictData data) {
  uint32_t depth = 0;
  for (const auto& [k, v] : data.items)
    depth = std::max({depth, k.depth(), v.depth()});
  if (depth + 1 > kMaxDepth) {
    fail_kind(ErrorKind::kLimit, "values nested deeper than {} levels", kMaxDepth);
  }
  data.depth = depth + 1;
  return Value::dict(std::make_shared<DictData>(std::move(data)));
}

// ---- str / repr

void append_str(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return;
    case Kind::kString:
      out += v.str();
      return;
    default: {
      ReprState state;
      append_repr(out, v, state);
    }
  }
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.str();
  std::string out;
  append_str(out, v);
  return out;
}

std::string to_repr(const Value& v) {
  std::string out;
  ReprState state;
  append_repr(out, v, state);
  return out;
}

namespace {

void append_items(std::string& out, const std::vector<Value>& items, size_t from,
                  ReprState& state) {
  for (size_t k = from; k < items.size(); ++k) {
    if (k > from) out += ", ";
    append_repr(out, items[k], state);
  }
}

}  // namespace

void append_repr(std::string& out, const Value& v, ReprState& state) {
  if (state.depth > static_cast<int>(kMaxDepth) + 8) {
    fail_kind(ErrorKind::kLimit, "values nested deeper than {} levels", kMaxDepth);
  }
  ++state.depth;
  switch (v.kind()) {
    case Kind::kUndefined:
      out += "Undefined";
      break;
    case Kind::kNone:
      out += "None";
      break;
    case Kind::kBool:
      out += v.get_bool() ? "True" : "False";
      break;
    case Kind::kInt:
      out += std::to_string(v.get_int());
      break;
    case Kind::kFloat:
      out += py_float_repr(v.get_float());
      break;
    case Kind::kString:
      if (v.is_markup()) out += "Markup(";
      append_py_repr(out, v.str());
      if (v.is_markup()) out += ')';
      break;
    case Kind::kList: {
      const ListData& l = v.list();
      switch (l.kind) {
        case ListKind::kList:
          out += '[';
          append_items(out, l.items, 0, state);
          out += ']';
          break;
        case ListKind::kTuple:
          out += '(';
          append_items(out, l.items, 0, state);
          if (l.items.size() == 1) out += ',';
          out += ')';
          break;
        case ListKind::kGenerator:
          out += "<generator object>";
          break;
        case ListKind::kDictKeys:
        case ListKind::kDictValues:
        case ListKind::kDictItems:
          out += v.type_name();
          out += "([";
          append_items(out, l.items, 0, state);
          out += "])";
          break;
      }
      break;
    }
    case Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [k, val] : v.dict().items) {
        if (!first) out += ", ";
        first = false;
        append_repr(out, k, state);
        out += ": ";
        append_repr(out, val, state);
      }
      out += '}';
      break;
    }
    case Kind::kObject:
      v.object().repr(out, state);
      break;
  }
  --state.depth;
}

// ---- comparison

namespace {

bool numbers_equal(const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) return a.get_int() == b.get_int();
  if (a.kind() == Kind::kFloat && b.kind() == Kind::kFloat) return a.get_float() == b.get_float();
  const double f = a.kind() == Kind::kFloat ? a.get_float() : b.get_float();
  const int64_t i = a.kind() == Kind::kFloat ? b.get_int() : a.get_int();
  if (!std::isfinite(f) || std::floor(f) != f) return false;
  if (f < -9.2233720368547758e18 || f >= 9.2233720368547758e18) return false;
  return static_cast<int64_t>(f) == i;
}

void check_depth(int depth) {
  if (depth > static_cast<int>(kMaxDepth) + 8) {
    fail_kind(ErrorKind::kLimit, "values nested deeper than {} levels", kMaxDepth);
  }
}

}  // namespace

bool py_equal(const Value& a, const Value& b, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) return numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kList: {
      const ListData& x = a.list();
      const ListData& y = b.list();
      if (x.kind == ListKind::kGenerator || y.kind == ListKind::kGenerator) {
        return a.identity() == b.identity();
      }
      if (x.kind != y.kind || x.items.size() != y.items.size()) return false;
      for (size_t k = 0; k < x.items.size(); ++k) {
        if (!py_equal(x.items[k], y.items[k], depth + 1)) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const DictData& x = a.dict();
      const DictData& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (other == nullptr || !py_equal(v, *other, depth + 1)) return false;
      }
      return true;
    }
    case Kind::kObject:
      return a.identity() == b.identity();
    default:
      return false;
  }
}

namespace {

template <typename T>
bool apply_order(const T& x, const T& y, std::string_view op) {
  if (op == "<") return x < y;
  if (op == "<=") return x <= y;
  if (op == ">") return x > y;
  return x >= y;
}

}  // namespace

bool py_compare(const Value& a, const Value& b, std::string_view op, int depth) {
  check_depth(depth);
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return apply_order(a.get_int(), b.get_int(), op);
    return apply_order(a.get_float(), b.get_float(), op);
  }
  if (a.is_undefined()) fail("{}", a.undefined_message());
  if (b.is_undefined()) fail("{}", b.undefined_message());
  if (a.is_string() && b.is_string()) return apply_order(a.str(), b.str(), op);
  if (a.is_list() && b.is_list() && a.list().kind == b.list().kind &&
      (a.list().kind == ListKind::kList || a.list().kind == ListKind::kTuple)) {
    const auto& x = a.list().items;
    const auto& y = b.list().items;
    const size_t n = std::min(x.size(), y.size());
    for (size_t k = 0; k < n; ++k) {
      if (!py_equal(x[k], y[k], depth + 1)) return py_compare(x[k], y[k], op, depth + 1);
    }
    return apply_order(x.size(), y.size(), op);
  }
  fail("'{}' not supported between instances of '{}' and '{}'", op, a.type_name(), b.type_name());
}

void require_hashable(const Value& key) {
  if (key.is_dict()) fail("unhashable type: 'dict'");
  if (key.is_list()) {
    const ListData& l = key.list();
    if (l.kind == ListKind::kTuple) {
      for (const Value& v : l.items)
        require_hashable(v);
    } else if (l.kind != ListKind::kGenerator) {
      fail("unhashable type: '{}'", key.type_name());
    }
  }
}

}  // namespace pagoda::jinja
