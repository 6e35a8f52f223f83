// Template: a parsed Jinja template plus the environment's globals, immutable and safe to
// render from several threads at once (each render builds its own Interp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "jinja/interpreter.h"
#include "jinja/parser.h"

namespace pagoda::jinja {

class Template {
 public:
  // Syntax errors name the line: "line 3: unexpected end of template ...".
  static Result<std::unique_ptr<Template>> parse(std::string_view source);

  // Renders with `context` as the variables. raise_exception(msg) gives invalid_argument
  // with exactly msg; limits give resource_exhausted; other errors invalid_argument naming
  // the line; unsupported features unimplemented.
  Result<std::string> render(const DictData& context, const RenderLimits& limits) const;

  const Body& body() const { return parsed_.body; }
  const std::vector<std::string>& names() const { return parsed_.names; }
  std::optional<NameId> id_of(std::string_view name) const;
  // Ids of the names the interpreter binds itself (nullopt when the template never uses them).
  std::optional<NameId> loop_id() const { return loop_id_; }
  std::optional<NameId> caller_id() const { return caller_id_; }
  std::optional<NameId> varargs_id() const { return varargs_id_; }
  std::optional<NameId> kwargs_id() const { return kwargs_id_; }
  // The environment global bound to a name the template uses, or null.
  const Value* global(NameId id) const {
    return id < globals_.size() && !globals_[id].is_undefined() ? &globals_[id] : nullptr;
  }

 private:
  Template() = default;
  ParsedTemplate parsed_;
  std::unordered_map<std::string, NameId> ids_;
  std::vector<Value> globals_;  // by NameId; Undefined when there is no such global
  std::optional<NameId> loop_id_, caller_id_, varargs_id_, kwargs_id_;
};

// Error -> Status, as Template::parse/render report them.
Status to_status(const TemplateError& e);

}  // namespace pagoda::jinja
