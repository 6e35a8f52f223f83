// Value: what a Jinja expression evaluates to, with Python's semantics for str(), repr(),
// ==, <, truthiness and hashing (dict keys). Kinds mirror the Python objects Jinja sees:
// Undefined, None, bool, int (64-bit; overflow is an error), float, str (UTF-8), list/tuple
// (and the generator/dict-view flavours Jinja filters return), dict (insertion-ordered), and
// Objects (namespace, loop, macro, bound method, range, cycler, joiner).
//
// Lists and dicts are immutable once built (HF renders in an ImmutableSandboxedEnvironment);
// only namespaces mutate. Containers record their nesting depth, which is capped (kMaxDepth)
// so that recursive printing, comparison and destruction stay shallow.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "jinja/error.h"

namespace pagoda::jinja {

class Interp;
class Value;
struct Args;

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kDict,
  kObject
};

// The Python type a list-like value stands for.
enum class ListKind : uint8_t { kList, kTuple, kGenerator, kDictKeys, kDictValues, kDictItems };

inline constexpr uint32_t kMaxDepth = 200;  // nesting of lists/dicts/values in recursion

struct ListData;
struct DictData;
class Object;

class Value {
 public:
  Value() = default;  // Undefined without a message
  static Value none() { return Value(Kind::kNone); }
  static Value boolean(bool b) {
    Value v(Kind::kBool);
    v.b_ = b;
    return v;
  }
  static Value integer(int64_t i) {
    Value v(Kind::kInt);
    v.i_ = i;
    return v;
  }
  static Value number(double f) {
    Value v(Kind::kFloat);
    v.f_ = f;
    return v;
  }
  static Value string(std::string s);
  static Value string(std::shared_ptr<const std::string> s);
  // markupsafe.Markup: a str that |safe or |escape produced. Adding, joining or %-formatting
  // other strings into it HTML-escapes them (byte-identical quirks of real templates).
  static Value markup(std::string s) {
    Value v = string(std::move(s));
    v.markup_ = true;
    return v;
  }
  // A string with the same markup flag as this one.
  Value same_flavour(std::string s) const {
    return markup_ ? markup(std::move(s)) : string(std::move(s));
  }
  // An Undefined that explains itself ("'x' is undefined") when misused.
  static Value undefined(std::string message);
  static Value list(std::shared_ptr<ListData> data);
  static Value dict(std::shared_ptr<DictData> data);
  static Value object(std::shared_ptr<Object> obj);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return kind_ == Kind::kString && markup_; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_object() const { return kind_ == Kind::kObject; }
  // bool, int and float (Python's numbers.Number includes bool).
  bool is_number() const {
    return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat;
  }
  // int or bool (Python bool is an int).
  bool is_integral() const { return kind_ == Kind::kBool || kind_ == Kind::kInt; }

  bool get_bool() const { return b_; }
  // Precondition: is_integral().
  int64_t get_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  // Precondition: is_number().
  double get_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(get_int()); }
  const std::string& str() const { return *static_cast<const std::string*>(ptr_.get()); }
  std::shared_ptr<const std::string> str_ptr() const {
    return std::static_pointer_cast<const std::string>(ptr_);
  }
  const ListData& list() const { return *static_cast<const ListData*>(ptr_.get()); }
  const DictData& dict() const { return *static_cast<const DictData*>(ptr_.get()); }
  Object& object() const { return *static_cast<Object*>(const_cast<void*>(ptr_.get())); }
  std::shared_ptr<Object> object_ptr() const;
  const void* identity() const { return ptr_.get(); }
  // The message an Undefined raises with when used.
  std::string undefined_message() const;

  // Nesting depth (0 for scalars and objects).
  uint32_t depth() const;
  bool truthy() const;
  // Python's type(x).__name__.
  std::string_view type_name() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::kUndefined;
  bool markup_ = false;
  union {
    bool b_;
    int64_t i_ = 0;
    double f_;
  };
  std::shared_ptr<const void> ptr_;
};

struct ListData {
  std::vector<Value> items;
  ListKind kind = ListKind::kList;
  uint32_t depth = 1;
  // Generators are single-use: items before `consumed` are gone.
  mutable size_t consumed = 0;
  // Generators from Jinja's lazy filters: the error their computation hit, raised when the
  // generator is consumed (Python raises it then, and never if it is not).
  std::shared_ptr<const TemplateError> error;
};

// Insertion-ordered dict. Keys follow Python hashing: 1, 1.0 and True are the same key.
struct DictData {
  std::vector<std::pair<Value, Value>> items;
  uint32_t depth = 1;

  const Value* find(std::string_view key) const;
  const Value* find(const Value& key) const;
  // Inserts or overwrites (keeps the original position). Throws for unhashable keys.
  void set(Value key, Value value);
  size_t size() const { return items.size(); }
  void clear() {
    items.clear();
    index_.clear();
  }

 private:
  std::unordered_map<std::string, uint32_t> index_;  // string keys, once the dict is large
};

struct ReprState;

class Object {
 public:
  virtual ~Object() = default;
  // Python's type(x).__name__, e.g. "Namespace".
  virtual std::string_view type_name() const = 0;
  // jinja2.utils.object_type_repr: "jinja2.utils.Namespace object".
  virtual std::string type_repr() const { return std::string(type_name()) + " object"; }
  virtual void repr(std::string& out, ReprState& state) const;
  // An attribute, or nullopt when the object has none (the caller then makes an Undefined).
  virtual std::optional<Value> get_attr(std::string_view name, Interp& in);
  virtual bool callable() const { return false; }
  virtual Value call(Interp& in, Args& args);
  virtual bool truthy() const { return true; }
  // Iteration (range); nullopt when not iterable.
  virtual std::optional<std::vector<Value>> items(Interp& in) const;
  // Mutable namespaces expose their attributes for printing and `set ns.x`.
  virtual DictData* attributes() { return nullptr; }
};

// Builders; each computes the container depth and throws past kMaxDepth.
Value make_list(std::vector<Value> items, ListKind kind = ListKind::kList);
Value make_dict(DictData data);
// Python str(x) / repr(x).
std::string to_str(const Value& v);
void append_str(std::string& out, const Value& v);
std::string to_repr(const Value& v);
void append_repr(std::string& out, const Value& v, ReprState& state);

struct ReprState {
  int depth = 0;
  std::vector<const void*> active;  // namespaces being printed (recursion shows {...})
};

// Python ==.
bool py_equal(const Value& a, const Value& b, int depth = 0);
// Python a <op> b for op in < <= > >=; throws TypeError for unorderable types.
bool py_compare(const Value& a, const Value& b, std::string_view op, int depth = 0);
inline bool py_less(const Value& a, const Value& b) {
  return py_compare(a, b, "<");
}
// Throws TypeError "unhashable type: 'list'" for list/dict keys.
void require_hashable(const Value& key);

}  // namespace pagoda::jinja
