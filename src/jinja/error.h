// TemplateError: how failures travel inside the Jinja interpreter. It is thrown internally
// (deep recursion makes Status plumbing noisy) and always caught at Template::parse/render,
// which turn it into a Status; it never leaves the jinja library.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

namespace pagoda::jinja {

enum class ErrorKind {
  kSyntax,       // the template does not parse
  kRuntime,      // Python would raise (TypeError, UndefinedError, ...)
  kRaised,       // raise_exception(message) from the template
  kLimit,        // step, output, size or depth limit
  kUnsupported,  // valid Jinja we do not implement
};

struct TemplateError {
  ErrorKind kind;
  std::string message;
  int line = 0;  // 0: unknown (the interpreter fills in its current line)
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw TemplateError{ErrorKind::kRuntime, fmt::format(f, std::forward<Args>(args)...)};
}

template <typename... Args>
[[noreturn]] void fail_kind(ErrorKind kind, fmt::format_string<Args...> f, Args&&... args) {
  throw TemplateError{kind, fmt::format(f, std::forward<Args>(args)...)};
}

}  // namespace pagoda::jinja
