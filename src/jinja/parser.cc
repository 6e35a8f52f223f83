// Recursive-descent parser for Jinja templates (see parser.h). Function names follow
// jinja2.parser so the two can be read side by side.
#include "jinja/parser.h"

#include <algorithm>
#include <unordered_map>

#include "jinja/error.h"
#include "jinja/lexer.h"

namespace pagoda::jinja {

namespace {

using Names = std::vector<std::string_view>;

class Parser {
 public:
  Parser(std::vector<Token> tokens, ParsedTemplate& out) : toks_(std::move(tokens)), out_(out) {
    check_lexer_error(toks_[0]);
  }

  void run() {
    out_.body = subparse(nullptr);
    for (const Unknown& u : unknown_) {
      if (!u.node->soft) error(u.line, u.message);
    }
  }

 private:
  struct Unknown {
    struct Flag {
      bool soft;
    };
    std::shared_ptr<Flag> node;
    int line;
    std::string message;
  };

  // ---- token stream

  // A lexical error surfaces when the stream reaches it (as current token or lookahead).
  static void check_lexer_error(const Token& t) {
    if (t.type == Tok::kError) {
      throw TemplateError{static_cast<ErrorKind>(t.error_kind), t.text, t.line};
    }
  }
  const Token& cur() const { return toks_[pos_]; }
  const Token& look() const {
    const Token& t = toks_[std::min(pos_ + 1, toks_.size() - 1)];
    check_lexer_error(t);
    return t;
  }
  const Token& next() {
    const Token& t = toks_[pos_];
    if (pos_ + 1 < toks_.size()) ++pos_;
    check_lexer_error(toks_[pos_]);
    return t;
  }
  bool skip_op(std::string_view op) {
    if (!cur().is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!cur().is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void error(int line, std::string message) const {
    throw TemplateError{ErrorKind::kSyntax, std::move(message), line};
  }
  [[noreturn]] void unexpected(std::string_view expected) const {
    if (cur().type == Tok::kEof) {
      error(cur().line, fmt::format("unexpected end of template, expected '{}'.", expected));
    }
    error(cur().line, fmt::format("expected token '{}', got {}", expected, describe(cur())));
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) unexpected(op);
  }
  void expect(Tok type, std::string_view what) {
    if (cur().type != type) unexpected(what);
    next();
  }
  const Token& expect_name() {
    if (cur().type != Tok::kName) unexpected("name");
    return next();
  }
  void expect_name(std::string_view name) {
    if (!skip_name(name)) unexpected(name);
  }

  NameId intern(const std::string& name) {
    const auto it = ids_.find(name);
    if (it != ids_.end()) return it->second;
    const auto id = static_cast<NameId>(out_.names.size());
    out_.names.push_back(name);
    ids_.emplace(name, id);
    return id;
  }

  // Parser recursion guard.
  struct Guard {
    explicit Guard(Parser& p) : p_(p) {
      if (++p_.recursion_ > kMaxNesting) p_.error(p_.cur().line, "template nested too deeply");
    }
    ~Guard() { --p_.recursion_; }
    Parser& p_;
  };

  // ---- AST helpers

  ExprPtr make(ExprKind kind, int line) { return std::make_unique<Expr>(kind, line); }

  // Computes e's depth from its children and enforces kMaxExprDepth.
  ExprPtr finish(ExprPtr e) {
    int d = 0;
    auto see = [&](const ExprPtr& c) {
      if (c) d = std::max(d, c->depth);
    };
    see(e->a);
    see(e->b);
    see(e->c);
    for (const auto& i : e->items)
      see(i);
    for (const auto& [op, x] : e->comparisons)
      see(x);
    for (const auto& i : e->args.positional)
      see(i);
    for (const auto& [k, x] : e->args.keywords)
      see(x);
    see(e->args.star_args);
    see(e->args.star_kwargs);
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth) error(e->line, "expression nested too deeply");
    return e;
  }

  ExprPtr make_const(Value v, int line) {
    auto e = make(ExprKind::kConst, line);
    e->value = std::move(v);
    return e;
  }

  // ---- template structure

  // Parses until one of `end` tags ({% name %}) or the end of input; stops on the tag name.
  Body subparse(const Names* end) {
    Guard guard(*this);
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::kData) {
        auto s = std::make_unique<Stmt>(StmtKind::kData, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == Tok::kVarBegin) {
        const int line = next().line;
        auto s = std::make_unique<Stmt>(StmtKind::kPrint, line);
        s->exprs.push_back(parse_tuple(false, true, nullptr, false));
        expect(Tok::kVarEnd, "end of print statement");
        body.push_back(std::move(s));
      } else if (t.type == Tok::kBlockBegin) {
        next();
        if (end != nullptr && cur().type == Tok::kName &&
            std::find(end->begin(), end->end(), cur().text) != end->end()) {
          return body;
        }
        body.push_back(parse_statement());
        expect(Tok::kBlockEnd, "end of statement block");
      } else if (t.type == Tok::kEof) {
        return body;
      } else {
        unexpected("begin of statement block");
      }
    }
  }

  Body parse_statements(const Names& end, bool drop_needle) {
    skip_op(":");
    expect(Tok::kBlockEnd, "end of statement block");
    end_stack_.push_back(end);
    Body body = subparse(&end);
    end_stack_.pop_back();
    if (cur().type == Tok::kEof) fail_unknown_tag(nullptr, cur().line, &end);
    if (drop_needle) next();
    return body;
  }

  [[noreturn]] void fail_unknown_tag(const std::string* name, int line, const Names* looking) {
    std::string msg = name == nullptr ? "Unexpected end of template."
                                      : fmt::format("Encountered unknown tag '{}'.", *name);
    const Names* current = looking != nullptr   ? looking
                           : end_stack_.empty() ? nullptr
                                                : &end_stack_.back();
    if (current != nullptr) {
      std::string tags;
      for (size_t k = 0; k < current->size(); ++k) {
        if (k > 0) tags += " or ";
        tags += fmt::format("'{}'", (*current)[k]);
      }
      bool expected_somewhere = false;
      for (const Names& n : end_stack_) {
        if (name != nullptr && std::find(n.begin(), n.end(), *name) != n.end()) {
          expected_somewhere = true;
        }
      }
      if (expected_somewhere) {
        msg += fmt::format(
            " You probably made a nesting mistake. Jinja is expecting this tag, but currently "
            "looking for {}.",
            tags);
      } else {
        msg += fmt::format(" Jinja was looking for the following tags: {}.", tags);
      }
    }
    if (!tag_stack_.empty()) {
      msg +=
          fmt::format(" The innermost block that needs to be closed is '{}'.", tag_stack_.back());
    }
    error(line, msg);
  }

  // A new Python frame: filters are no longer "soft", loops end, macros track their names.
  struct Frame {
    Frame(Parser& p, bool resets_loops) : p_(p), soft_(p.soft_), loops_(p.loop_depth_) {
      p_.soft_ = false;
      if (resets_loops) p_.loop_depth_ = 0;
    }
    ~Frame() {
      p_.soft_ = soft_;
      p_.loop_depth_ = loops_;
    }
    Parser& p_;
    bool soft_;
    int loops_;
  };

  StmtPtr parse_statement() {
    Guard guard(*this);
    const Token& t = cur();
    if (t.type != Tok::kName) error(t.line, "tag name expected");
    const std::string tag = t.text;
    tag_stack_.push_back(tag);
    StmtPtr s;
    if (tag == "for") {
      s = parse_for();
    } else if (tag == "if") {
      s = parse_if();
    } else if (tag == "set") {
      s = parse_set();
    } else if (tag == "macro") {
      s = parse_macro();
    } else if (tag == "call") {
      s = parse_call_block();
    } else if (tag == "filter") {
      s = parse_filter_block();
    } else if (tag == "with") {
      s = parse_with();
    } else if (tag == "print") {
      s = std::make_unique<Stmt>(StmtKind::kPrint, next().line);
      while (cur().type != Tok::kBlockEnd) {
        if (!s->exprs.empty()) expect_op(",");
        s->exprs.push_back(parse_expression(true));
      }
    } else if (tag == "break" || tag == "continue") {
      const int line = next().line;
      if (loop_depth_ == 0) error(line, fmt::format("'{}' outside loop", tag));
      s = std::make_unique<Stmt>(tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, line);
    } else if (tag == "generation") {
      const int line = next().line;
      Frame frame(*this, true);
      s = std::make_unique<Stmt>(StmtKind::kScopedBody, line);
      s->body = parse_statements({"endgeneration"}, true);
    } else if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" ||
               tag == "from" || tag == "autoescape") {
      throw TemplateError{ErrorKind::kUnsupported,
                          fmt::format("the '{}' tag is not supported in chat templates", tag),
                          t.line};
    } else {
      tag_stack_.pop_back();
      fail_unknown_tag(&tag, t.line, nullptr);
    }
    tag_stack_.pop_back();
    return s;
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<Stmt>(StmtKind::kFor, next().line);
    const Names in_rule = {"in"};
    s->target = parse_assign_target(true, false, &in_rule, false);
    expect_name("in");
    const Names recursive_rule = {"recursive"};
    s->expr = parse_tuple(false, false, &recursive_rule, false);
    Frame frame(*this, false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().text != "endfor") {
      s->has_else = true;
      s->else_body = parse_statements({"endfor"}, true);
    }
    return s;
  }

  StmtPtr parse_if() {
    auto s = std::make_unique<Stmt>(StmtKind::kIf, next().line);
    const bool saved = soft_;
    soft_ = true;
    while (true) {
      s->exprs.push_back(parse_tuple(false, false, nullptr, false));
      s->bodies.push_back(parse_statements({"elif", "else", "endif"}, false));
      const Token& t = next();
      if (t.text == "elif") continue;
      if (t.text == "else") {
        s->has_else = true;
        s->else_body = parse_statements({"endif"}, true);
      }
      break;
    }
    soft_ = saved;
    return s;
  }

  StmtPtr parse_set() {
    const int line = next().line;
    Target target = parse_assign_target(true, false, nullptr, true);
    if (skip_op("=")) {
      auto s = std::make_unique<Stmt>(StmtKind::kSet, line);
      s->target = std::move(target);
      s->expr = parse_tuple(false, true, nullptr, false);
      return s;
    }
    auto s = std::make_unique<Stmt>(StmtKind::kSetBlock, line);
    s->target = std::move(target);
    s->expr = parse_filter(nullptr, false);
    Frame frame(*this, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  std::shared_ptr<Signature> parse_signature() {
    auto sig = std::make_shared<Signature>();
    expect_op("(");
    while (!cur().is_op(")")) {
      if (!sig->params.empty()) expect_op(",");
      const Token& name = expect_name();
      sig->param_names.push_back(name.text);
      sig->params.push_back(intern(name.text));
      if (skip_op("=")) {
        sig->defaults.push_back(parse_expression(true));
      } else if (!sig->defaults.empty()) {
        error(name.line, "non-default argument follows default argument");
      }
    }
    expect_op(")");
    return sig;
  }

  // Parses a macro or call-block body, recording whether it reads varargs/kwargs/caller.
  Body parse_macro_body(Signature& sig, std::string_view end_tag) {
    Frame frame(*this, true);
    macro_stack_.push_back(&sig);
    Body body = parse_statements({end_tag}, true);
    macro_stack_.pop_back();
    return body;
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<Stmt>(StmtKind::kMacro, next().line);
    const Token& name = expect_name();
    s->macro_name = name.text;
    s->macro_id = intern(name.text);
    s->signature = parse_signature();
    s->body = parse_macro_body(*s->signature, "endmacro");
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = std::make_unique<Stmt>(StmtKind::kCallBlock, next().line);
    s->signature = cur().is_op("(") ? parse_signature() : std::make_shared<Signature>();
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::kCall) error(s->line, "expected call");
    s->body = parse_macro_body(*s->signature, "endcall");
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<Stmt>(StmtKind::kFilterBlock, next().line);
    s->expr = parse_filter(nullptr, true);
    Frame frame(*this, false);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = std::make_unique<Stmt>(StmtKind::kWith, next().line);
    while (cur().type != Tok::kBlockEnd) {
      if (!s->assigns.empty()) expect_op(",");
      Target target = parse_assign_target(true, false, nullptr, false);
      expect_op("=");
      s->assigns.emplace_back(std::move(target), parse_expression(true));
    }
    Frame frame(*this, false);
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  Target to_target(const Expr& e) {
    Target t;
    if (e.kind == ExprKind::kName) {
      t.kind = Target::Kind::kName;
      t.id = e.id;
      t.name = e.name;
      return t;
    }
    if (e.kind == ExprKind::kTuple) {
      t.kind = Target::Kind::kTuple;
      for (const auto& item : e.items)
        t.items.push_back(to_target(*item));
      return t;
    }
    static const char* const kNames[] = {"const",    "name",    "getattr", "getitem", "slice",
                                         "call",     "filter",  "test",    "neg",     "pos",
                                         "not",      "binexpr", "and",     "or",      "compare",
                                         "condexpr", "concat",  "list",    "tuple",   "dict"};
    error(e.line, fmt::format("can't assign to '{}'", kNames[static_cast<int>(e.kind)]));
  }

  Target parse_assign_target(bool with_tuple, bool name_only, const Names* extra_end,
                             bool with_namespace) {
    if (with_namespace && look().is_op(".")) {
      Target t;
      t.kind = Target::Kind::kNamespaceAttr;
      t.name = expect_name().text;
      t.id = intern(t.name);
      next();  // .
      t.attr = expect_name().text;
      return t;
    }
    if (name_only) {
      Target t;
      t.name = expect_name().text;
      t.id = intern(t.name);
      return t;
    }
    ExprPtr e = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    return to_target(*e);
  }

  // ---- expressions

  ExprPtr parse_expression(bool with_condexpr) {
    Guard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    const int line = cur().line;
    const size_t first_unknown = unknown_.size();
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      const bool saved = soft_;
      soft_ = true;
      for (size_t k = first_unknown; k < unknown_.size(); ++k)
        unknown_[k].node->soft = true;
      auto e = make(ExprKind::kCondExpr, line);
      e->b = parse_or();
      if (skip_name("else")) {
        Guard guard(*this);
        e->c = parse_condexpr();
      }
      e->a = std::move(expr1);
      soft_ = saved;
      expr1 = finish(std::move(e));
    }
    return expr1;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (cur().is_name("or")) {
      auto e = make(ExprKind::kOr, next().line);
      e->a = std::move(left);
      e->b = parse_and();
      left = finish(std::move(e));
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (cur().is_name("and")) {
      auto e = make(ExprKind::kAnd, next().line);
      e->a = std::move(left);
      e->b = parse_not();
      left = finish(std::move(e));
    }
    return left;
  }

  ExprPtr parse_not() {
    if (cur().is_name("not")) {
      Guard guard(*this);
      auto e = make(ExprKind::kNot, next().line);
      e->a = parse_not();
      return finish(std::move(e));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    const int line = cur().line;
    ExprPtr expr = parse_math1();
    std::vector<std::pair<std::string, ExprPtr>> ops;
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::kOp && (t.text == "==" || t.text == "!=" || t.text == "<" ||
                                 t.text == "<=" || t.text == ">" || t.text == ">=")) {
        std::string op = next().text;
        ops.emplace_back(std::move(op), parse_math1());
      } else if (skip_name("in")) {
        ops.emplace_back("in", parse_math1());
      } else if (t.is_name("not") && look().is_name("in")) {
        next();
        next();
        ops.emplace_back("notin", parse_math1());
      } else {
        break;
      }
    }
    if (ops.empty()) return expr;
    auto e = make(ExprKind::kCompare, line);
    e->a = std::move(expr);
    e->comparisons = std::move(ops);
    return finish(std::move(e));
  }

  ExprPtr binary(std::string op, int line, ExprPtr left, ExprPtr right) {
    auto e = make(ExprKind::kBinary, line);
    e->op = std::move(op);
    e->a = std::move(left);
    e->b = std::move(right);
    return finish(std::move(e));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (cur().is_op("+") || cur().is_op("-")) {
      const Token& t = next();
      std::string op = t.text;
      const int line = t.line;
      left = binary(std::move(op), line, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    const int line = cur().line;
    ExprPtr first = parse_math2();
    if (!cur().is_op("~")) return first;
    auto e = make(ExprKind::kConcat, line);
    e->items.push_back(std::move(first));
    while (skip_op("~"))
      e->items.push_back(parse_math2());
    return finish(std::move(e));
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (cur().is_op("*") || cur().is_op("/") || cur().is_op("//") || cur().is_op("%")) {
      const Token& t = next();
      std::string op = t.text;
      const int line = t.line;
      left = binary(std::move(op), line, std::move(left), parse_pow());
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (cur().is_op("**")) {
      const int line = next().line;
      left = binary("**", line, std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    Guard guard(*this);
    ExprPtr node;
    if (cur().is_op("-") || cur().is_op("+")) {
      const Token& t = next();
      auto e = make(t.text == "-" ? ExprKind::kNeg : ExprKind::kPos, t.line);
      e->a = parse_unary(false);
      node = finish(std::move(e));
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  ExprPtr parse_primary() {
    Guard guard(*this);
    const Token& t = cur();
    const int line = t.line;
    if (t.type == Tok::kName) {
      next();
      if (t.text == "true" || t.text == "True") return make_const(Value::boolean(true), line);
      if (t.text == "false" || t.text == "False") return make_const(Value::boolean(false), line);
      if (t.text == "none" || t.text == "None") return make_const(Value::none(), line);
      auto e = make(ExprKind::kName, line);
      e->name = t.text;
      e->id = intern(t.text);
      if (!macro_stack_.empty()) {
        for (Signature* sig : macro_stack_) {
          if (t.text == "varargs") sig->catch_varargs = true;
          if (t.text == "kwargs") sig->catch_kwargs = true;
          if (t.text == "caller") sig->uses_caller = true;
        }
      }
      return e;
    }
    if (t.type == Tok::kString) {
      std::string s = next().text;
      while (cur().type == Tok::kString)
        s += next().text;
      return make_const(Value::string(std::move(s)), line);
    }
    if (t.type == Tok::kInt) return make_const(Value::integer(next().int_value), line);
    if (t.type == Tok::kFloat) return make_const(Value::number(next().float_value), line);
    if (t.is_op("(")) {
      next();
      ExprPtr e = parse_tuple(false, true, nullptr, true);
      expect_op(")");
      return e;
    }
    if (t.is_op("[")) {
      next();
      auto e = make(ExprKind::kList, line);
      while (!cur().is_op("]")) {
        if (!e->items.empty()) expect_op(",");
        if (cur().is_op("]")) break;
        e->items.push_back(parse_expression(true));
      }
      expect_op("]");
      return finish(std::move(e));
    }
    if (t.is_op("{")) {
      next();
      auto e = make(ExprKind::kDict, line);
      while (!cur().is_op("}")) {
        if (!e->items.empty()) expect_op(",");
        if (cur().is_op("}")) break;
        e->items.push_back(parse_expression(true));
        expect_op(":");
        e->items.push_back(parse_expression(true));
      }
      expect_op("}");
      return finish(std::move(e));
    }
    if (t.type == Tok::kEof) error(line, "unexpected end of template");
    error(line, fmt::format("unexpected {}", describe(t)));
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const Names* extra_end,
                      bool explicit_parentheses) {
    const int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      if (simplified) {
        args.push_back(parse_primary());
      } else {
        args.push_back(parse_expression(with_condexpr));
      }
      if (cur().is_op(",")) {
        is_tuple = true;
      } else {
        break;
      }
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parentheses) {
        error(cur().line, fmt::format("Expected an expression, got {}", describe(cur())));
      }
    }
    auto e = make(ExprKind::kTuple, line);
    e->items = std::move(args);
    return finish(std::move(e));
  }

  bool is_tuple_end(const Names* extra_end) const {
    const Token& t = cur();
    if (t.type == Tok::kVarEnd || t.type == Tok::kBlockEnd || t.is_op(")")) return true;
    return extra_end != nullptr && t.type == Tok::kName &&
           std::find(extra_end->begin(), extra_end->end(), t.text) != extra_end->end();
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (cur().is_op(".") || cur().is_op("[")) {
        node = parse_subscript(std::move(node));
      } else if (cur().is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (cur().is_op("|")) {
        node = parse_filter(std::move(node), false);
      } else if (cur().is_name("is")) {
        node = parse_test(std::move(node));
      } else if (cur().is_op("(")) {
        node = parse_call(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& t = next();
    if (t.text == ".") {
      const Token& attr = next();
      if (attr.type == Tok::kName) {
        auto e = make(ExprKind::kGetAttr, t.line);
        e->a = std::move(node);
        e->name = attr.text;
        return finish(std::move(e));
      }
      if (attr.type != Tok::kInt) error(attr.line, "expected name or number");
      auto e = make(ExprKind::kGetItem, t.line);
      e->a = std::move(node);
      e->b = make_const(Value::integer(attr.int_value), attr.line);
      return finish(std::move(e));
    }
    // [
    std::vector<ExprPtr> args;
    while (!cur().is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    auto e = make(ExprKind::kGetItem, t.line);
    e->a = std::move(node);
    if (args.size() == 1) {
      e->b = std::move(args[0]);
    } else {
      // x[a:b, c] compiles to Python's "(a:b, c)", a syntax error.
      for (const auto& arg : args) {
        if (arg->kind == ExprKind::kSlice) error(arg->line, "invalid syntax");
      }
      auto tuple = make(ExprKind::kTuple, t.line);
      tuple->items = std::move(args);
      e->b = finish(std::move(tuple));
    }
    return finish(std::move(e));
  }

  ExprPtr parse_subscribed() {
    const int line = cur().line;
    ExprPtr start;
    if (cur().is_op(":")) {
      next();
    } else {
      ExprPtr node = parse_expression(true);
      if (!cur().is_op(":")) return node;
      next();
      start = std::move(node);
    }
    auto e = make(ExprKind::kSlice, line);
    e->a = std::move(start);
    if (cur().is_op(":")) {
      // no stop
    } else if (!cur().is_op("]") && !cur().is_op(",")) {
      e->b = parse_expression(true);
    }
    if (skip_op(":")) {
      if (!cur().is_op("]") && !cur().is_op(",")) e->c = parse_expression(true);
    }
    return finish(std::move(e));
  }

  CallArgs parse_call_args() {
    CallArgs args;
    const int paren_line = cur().line;
    expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) {
      if (!ok) error(paren_line, "invalid syntax for function call expression");
    };
    while (!cur().is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (cur().is_op(")")) break;
      }
      if (cur().is_op("*")) {
        ensure(args.star_args == nullptr && args.star_kwargs == nullptr);
        next();
        args.star_args = parse_expression(true);
      } else if (cur().is_op("**")) {
        ensure(args.star_kwargs == nullptr);
        next();
        args.star_kwargs = parse_expression(true);
      } else if (cur().type == Tok::kName && look().is_op("=")) {
        ensure(args.star_kwargs == nullptr);
        std::string key = next().text;
        next();
        args.keywords.emplace_back(std::move(key), parse_expression(true));
      } else {
        ensure(args.star_args == nullptr && args.star_kwargs == nullptr && args.keywords.empty());
        args.positional.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
    return args;
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::kCall, cur().line);
    e->args = parse_call_args();
    e->a = std::move(node);
    return finish(std::move(e));
  }

  std::string dotted_name() {
    std::string name = expect_name().text;
    while (skip_op("."))
      name += "." + expect_name().text;
    return name;
  }

  void note_unknown(Expr& e, std::string_view what) {
    Unknown u;
    u.node = std::make_shared<Unknown::Flag>(Unknown::Flag{soft_});
    u.line = e.line;
    u.message = fmt::format("No {} named '{}'.", what, e.name);
    unknown_.push_back(std::move(u));
  }

  // subject | f(args) | g ...; subject is null for filter blocks.
  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (cur().is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      const int line = cur().line;
      auto e = make(ExprKind::kFilter, line);
      e->name = dotted_name();
      if (cur().is_op("(")) e->args = parse_call_args();
      e->a = std::move(node);
      e->filter = find_filter(e->name);
      if (e->filter == nullptr) note_unknown(*e, "filter");
      node = finish(std::move(e));
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    const int line = next().line;  // is
    const bool negated = skip_name("not");
    auto e = make(ExprKind::kTest, line);
    e->name = dotted_name();
    const Token& t = cur();
    if (t.is_op("(")) {
      e->args = parse_call_args();
    } else if ((t.type == Tok::kName || t.type == Tok::kString || t.type == Tok::kInt ||
                t.type == Tok::kFloat || t.is_op("(") || t.is_op("[") || t.is_op("{")) &&
               !t.is_name("else") && !t.is_name("or") && !t.is_name("and")) {
      if (t.is_name("is")) error(t.line, "You cannot chain multiple tests with is");
      ExprPtr arg = parse_postfix(parse_primary());
      e->args.positional.push_back(std::move(arg));
    }
    e->a = std::move(node);
    e->test = find_test(e->name);
    if (e->test == nullptr) note_unknown(*e, "test");
    ExprPtr result = finish(std::move(e));
    if (negated) {
      auto n = make(ExprKind::kNot, line);
      n->a = std::move(result);
      result = finish(std::move(n));
    }
    return result;
  }

  std::vector<Token> toks_;
  size_t pos_ = 0;
  ParsedTemplate& out_;
  std::unordered_map<std::string, NameId> ids_;
  int recursion_ = 0;
  bool soft_ = false;
  int loop_depth_ = 0;
  std::vector<std::string> tag_stack_;
  std::vector<Names> end_stack_;
  std::vector<Signature*> macro_stack_;
  std::vector<Unknown> unknown_;
};

}  // namespace

ParsedTemplate parse_template(std::string_view source) {
  ParsedTemplate out;
  Parser(tokenize(source), out).run();
  return out;
}

}  // namespace pagoda::jinja
