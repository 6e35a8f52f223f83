// Builtins of the Hugging Face Jinja environment: filters (jinja2.filters plus HF's tojson),
// tests (jinja2.tests), globals (range, namespace, dict, cycler, joiner, raise_exception,
// strftime_now) and the methods of str/dict/list the sandbox allows.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace pagoda::jinja {

class Interp;

// Evaluated call arguments.
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

using FilterFn = Value (*)(Interp& in, const Value& subject, Args& args);
using TestFn = bool (*)(Interp& in, const Value& subject, Args& args);

// nullptr when Jinja has no such filter/test.
FilterFn find_filter(std::string_view name);
TestFn find_test(std::string_view name);

// Environment globals; nullopt when there is none by that name.
std::optional<Value> find_global(std::string_view name);

// obj.name for str, dict and list values: a bound method, an "unsafe" Undefined for the
// mutating methods the immutable sandbox forbids, or nullopt when Python has no such
// attribute.
std::optional<Value> find_method(Interp& in, const Value& self, std::string_view name);
// Calls self.name(args) without allocating a bound method; nullopt when there is no method.
std::optional<Value> call_method(Interp& in, const Value& self, std::string_view name, Args& args);

// markupsafe.escape: & < > " ' as entities.
std::string html_escape(std::string_view s);
// markupsafe.escape(v): Markup unchanged, anything else str()-ed and escaped.
Value markup_escape(const Value& v);

// json.dumps as HF's tojson calls it.
struct JsonOptions {
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::optional<std::string> indent;  // nullopt: single line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
};
void append_json(Interp& in, std::string& out, const Value& v, const JsonOptions& options);

// Binds args to parameter names like a Python signature; throws TypeError on unknown or
// duplicate names and on too many positionals. Missing parameters are nullopt.
std::vector<std::optional<Value>> bind_args(std::string_view function, Args& args,
                                            std::initializer_list<std::string_view> params);

}  // namespace pagoda::jinja
