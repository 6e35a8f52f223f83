// Template: parse once, render many times (see template.h).
#include "jinja/template.h"

#include <new>

#include "jinja/py_text.h"

namespace pagoda::jinja {

Status to_status(const TemplateError& e) {
  const std::string where = e.line > 0 ? fmt::format("chat template line {}: ", e.line) : "";
  switch (e.kind) {
    case ErrorKind::kRaised:
      return invalid_argument("{}", e.message);
    case ErrorKind::kSyntax:
      return invalid_argument("chat template syntax error at line {}: {}", e.line, e.message);
    case ErrorKind::kLimit:
      return resource_exhausted("{}{}", where, e.message);
    case ErrorKind::kUnsupported:
      return unimplemented("{}{}", where, e.message);
    case ErrorKind::kRuntime:
      break;
  }
  return invalid_argument("{}{}", where, e.message);
}

Result<std::unique_ptr<Template>> Template::parse(std::string_view source) {
  if (const auto bad = find_invalid_utf8(source)) {
    return invalid_argument("chat template is not valid UTF-8 (byte offset {})", *bad);
  }
  std::unique_ptr<Template> t(new Template());
  try {
    t->parsed_ = parse_template(source);
  } catch (const TemplateError& e) {
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("out of memory while parsing the chat template");
  }
  const auto& names = t->parsed_.names;
  t->globals_.resize(names.size());
  for (size_t id = 0; id < names.size(); ++id) {
    t->ids_.emplace(names[id], static_cast<NameId>(id));
    if (auto g = find_global(names[id])) t->globals_[id] = std::move(*g);
  }
  t->loop_id_ = t->id_of("loop");
  t->caller_id_ = t->id_of("caller");
  t->varargs_id_ = t->id_of("varargs");
  t->kwargs_id_ = t->id_of("kwargs");
  return t;
}

std::optional<NameId> Template::id_of(std::string_view name) const {
  const auto it = ids_.find(std::string(name));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

Result<std::string> Template::render(const DictData& context, const RenderLimits& limits) const {
  Interp in(*this, limits);
  try {
    return in.render(context);
  } catch (TemplateError& e) {
    if (e.line == 0 && e.kind != ErrorKind::kRaised) e.line = in.line();
    return to_status(e);
  } catch (const std::bad_alloc&) {
    return resource_exhausted("out of memory while rendering the chat template");
  } catch (const std::exception& e) {
    return internal_error("chat template render failed: {}", e.what());
  }
}

}  // namespace pagoda::jinja
