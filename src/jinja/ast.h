// AST of a parsed Jinja template: expressions (Expr) and statements (Stmt), as built by
// parser.cc and walked by interpreter.cc. Every Expr records its nesting depth, which the
// parser caps so that evaluating and destroying the tree never recurses deeply.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/builtins.h"
#include "jinja/value.h"

namespace pagoda::jinja {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Interned identifier (index into Template's name table).
using NameId = uint32_t;

struct CallArgs {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr star_args;    // *args
  ExprPtr star_kwargs;  // **kwargs
};

enum class ExprKind : uint8_t {
  kConst,
  kName,
  kGetAttr,  // obj.name
  kGetItem,  // obj[index]
  kSlice,    // only as a GetItem index: a:b:c
  kCall,
  kFilter,  // subject | name(args); subject is null inside {% filter %} / {% set x | f %}
  kTest,    // subject is name(args)
  kNeg,
  kPos,
  kNot,
  kBinary,  // + - * / // % **
  kAnd,
  kOr,
  kCompare,
  kCondExpr,  // then if test else otherwise
  kConcat,    // a ~ b ~ c
  kList,
  kTuple,
  kDict,
};

struct Expr {
  ExprKind kind;
  int line = 0;
  int depth = 1;

  // kConst
  Value value;
  // kName: id and text; kGetAttr / kFilter / kTest: the name
  NameId id = 0;
  std::string name;
  // Operator for kBinary ("+", "//", ...).
  std::string op;
  // Operands: kGetAttr/kGetItem/kNeg/kPos/kNot/kFilter/kTest subject in a; kGetItem index in b;
  // kBinary/kAnd/kOr a, b; kSlice a:b:c (each may be null); kCondExpr: a if b else c;
  // kCall: callee in a.
  ExprPtr a, b, c;
  // kList / kTuple / kConcat items; kDict keys and values interleaved (k0 v0 k1 v1 ...).
  std::vector<ExprPtr> items;
  // kCompare: operators (==, !=, <, <=, >, >=, in, notin) and right-hand operands.
  std::vector<std::pair<std::string, ExprPtr>> comparisons;
  // kCall / kFilter / kTest arguments.
  CallArgs args;
  // kFilter / kTest: resolved builtin (null: unknown, fails when evaluated).
  FilterFn filter = nullptr;
  TestFn test = nullptr;

  Expr(ExprKind k, int l) : kind(k), line(l) {}
};

// Assignment target: a name, a tuple of targets, or namespace.attr.
struct Target {
  enum class Kind : uint8_t { kName, kTuple, kNamespaceAttr };
  Kind kind = Kind::kName;
  NameId id = 0;
  std::string name;
  std::string attr;
  std::vector<Target> items;
};

enum class StmtKind : uint8_t {
  kData,
  kPrint,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kWith,
  kBreak,
  kContinue,
  kScopedBody,  // {% generation %}: renders its body in a child scope
};

// A macro's (or call block's) signature.
struct Signature {
  std::vector<NameId> params;
  std::vector<std::string> param_names;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  bool catch_varargs = false;     // body reads `varargs`
  bool catch_kwargs = false;      // body reads `kwargs`
  bool uses_caller = false;       // body reads `caller`
};

struct Stmt {
  StmtKind kind;
  int line = 0;

  std::string text;                                 // kData
  std::vector<ExprPtr> exprs;                       // kPrint; kIf tests (one per branch)
  std::vector<Body> bodies;                         // kIf branch bodies (+ else if present)
  Target target;                                    // kFor / kSet / kSetBlock
  std::vector<std::pair<Target, ExprPtr>> assigns;  // kWith
  ExprPtr expr;    // kFor iterable, kSet value, kCallBlock call, filters of blocks
  ExprPtr filter;  // kFor `if` filter
  bool recursive = false;
  Body body;
  Body else_body;  // kFor else / kIf else
  bool has_else = false;
  // kMacro: name and signature; kCallBlock: caller signature.
  NameId macro_id = 0;
  std::string macro_name;
  std::shared_ptr<Signature> signature;
  // Macro objects point at their kMacro / kCallBlock statement; they never outlive the
  // render, and the Template (owner of the AST) outlives every render.

  Stmt(StmtKind k, int l) : kind(k), line(l) {}
};

}  // namespace pagoda::jinja
