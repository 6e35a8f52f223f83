// Interp: renders one parsed template once. Walks the AST with Jinja's scoping (a fresh
// scope per loop iteration, macros closing over their defining scope, {% if %} sharing its
// scope), the sandbox's attribute/item lookup rules, and the limits: a step budget, an
// output/string size cap, a container size cap and a recursion depth cap. All failures are
// thrown as TemplateError and turned into a Status by Template::render.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/builtins.h"
#include "jinja/value.h"

namespace pagoda::jinja {

class Template;

struct RenderLimits {
  uint64_t max_steps = 50'000'000;
  size_t max_output_bytes = 8u << 20;                        // also caps every intermediate string
  std::optional<std::chrono::system_clock::time_point> now;  // strftime_now clock override
};

// Variables of one scope; the chain ends at the template's root scope.
struct Scope {
  explicit Scope(std::shared_ptr<Scope> p) : parent(std::move(p)) {}
  const Value* find(NameId id) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
      for (const auto& [k, v] : s->vars) {
        if (k == id) return &v;
      }
    }
    return nullptr;
  }
  void set(NameId id, Value v) {
    for (auto& [k, old] : vars) {
      if (k == id) {
        old = std::move(v);
        return;
      }
    }
    vars.emplace_back(id, std::move(v));
  }
  std::shared_ptr<Scope> parent;
  std::vector<std::pair<NameId, Value>> vars;
  // Set when a macro, caller or loop object closes over this scope; a loop then gives the
  // next iteration a fresh scope instead of reusing this one.
  bool captured = false;
};
using ScopePtr = std::shared_ptr<Scope>;

class Interp {
 public:
  Interp(const Template& tmpl, const RenderLimits& limits);
  ~Interp();
  Interp(const Interp&) = delete;
  Interp& operator=(const Interp&) = delete;

  // Renders with `context` as the template's variables.
  std::string render(const DictData& context);

  // ---- services for builtins

  // Charges n steps; throws kLimit past the budget.
  void step(uint64_t n = 1) {
    steps_ += n;
    if (steps_ > limits_.max_steps) fail_steps();
  }
  // Checks a string about to be created (and charges for its bytes).
  void check_string(size_t bytes);
  // Checks a container about to be created (and charges for its elements).
  void check_items(size_t count);
  Value make_string(std::string s) {
    check_string(s.size());
    return Value::string(std::move(s));
  }

  // Sandboxed obj.name / obj[key] (Jinja's environment.getattr / getitem).
  Value get_attr(const Value& obj, std::string_view name);
  Value get_item(const Value& obj, const Value& key);
  Value call(const Value& callee, Args& args);
  // Python iter(): the items a for loop would see (consumes generators).
  std::vector<Value> iterate(const Value& v);
  Value apply_filter(std::string_view name, const Value& v, Args& args);
  bool apply_test(std::string_view name, const Value& v, Args& args);

  // object_type_repr(obj), for Undefined messages.
  static std::string type_repr(const Value& obj);
  Value undefined_attr(const Value& obj, std::string_view name);

  std::chrono::system_clock::time_point now() const;
  int line() const { return line_; }
  // Creates a namespace owned by this render (so reference cycles are broken at the end).
  Value new_namespace(DictData attrs);

  // Used by Loop and Macro objects.
  std::string call_macro(const Stmt& def, const Signature& sig, const ScopePtr& closure,
                         Args& args);
  std::string run_recursive_loop(const Stmt& loop, const ScopePtr& scope, const Value& iterable,
                                 int depth);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  [[noreturn]] void fail_steps() const;
  Value lookup(NameId id, const Scope& scope) const;

  Value eval(const Expr& e, const ScopePtr& scope);
  Value eval_get_item(const Expr& e, const ScopePtr& scope);
  Value eval_call(const Expr& e, const ScopePtr& scope);
  Value eval_filter(const Expr& e, const ScopePtr& scope, const Value* injected);
  Value eval_test(const Expr& e, const ScopePtr& scope);
  Value eval_compare(const Expr& e, const ScopePtr& scope);
  Value eval_collection(const Expr& e, const ScopePtr& scope);
  Args eval_args(const CallArgs& call, const ScopePtr& scope);
  Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

  Flow exec_body(const Body& body, const ScopePtr& scope, std::string& out);
  Flow exec(const Stmt& s, const ScopePtr& scope, std::string& out);
  Flow exec_for(const Stmt& s, const ScopePtr& scope, std::string& out);
  void run_for(const Stmt& s, const ScopePtr& scope, const Value& iterable, int depth,
               std::string& out);
  void exec_call_block(const Stmt& s, const ScopePtr& scope, std::string& out);
  void assign(const Target& t, const Value& v, const ScopePtr& scope);
  void emit(std::string& out, std::string_view text);

  struct DepthGuard {
    explicit DepthGuard(Interp& in);
    ~DepthGuard() { --in_.depth_; }
    Interp& in_;
  };

  const Template& tmpl_;
  RenderLimits limits_;
  uint64_t steps_ = 0;
  int depth_ = 0;
  int line_ = 0;
  size_t max_items_ = 0;
  ScopePtr root_;
  std::vector<std::shared_ptr<Object>> namespaces_;
  mutable std::optional<std::chrono::system_clock::time_point> now_;
};

// Python's binary operators (+ - * / // % **) on values.
Value binary_op(Interp& in, std::string_view op, const Value& a, const Value& b);
// Python's `item in container`.
bool contains(Interp& in, const Value& container, const Value& item);
// "%s" % args (printf-style formatting) and str.format(*args, **kwargs).
// A Markup format escapes the arguments it formats with %s/%r and returns Markup.
Value percent_format(Interp& in, const Value& format, const Value& args);
Value str_format(Interp& in, const std::string& format, Args& args);

}  // namespace pagoda::jinja
