// Strict JSON for files from outside (safetensors headers, Hugging Face config and tokenizer
// files): nlohmann's parser (RFC 8259: UTF-8 checked, no comments, no trailing commas) plus the two
// checks it does not make: an object repeating a key (nlohmann keeps the last one silently) and
// nesting deeper than a limit. Header-only so that every library that already links
// nlohmann_json (format, tokenizer) can use it; base itself does not link it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "base/status.h"

namespace pagoda {

namespace strict_json_detail {

// A SAX pass that builds nothing: it tracks the keys of every open object and the depth, and
// stops at the first repeated key, too-deep value or syntax error (recording a message).
class Checker final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit Checker(int max_depth) : max_depth_(max_depth) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return open(true); }
  bool start_array(std::size_t) override { return open(false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    if (!f.keys.insert(k).second) {
      error = fmt::format("duplicate key \"{}\"{}", shorten(k),
                          f.name.empty() ? std::string(" at the top level")
                                         : fmt::format(" in \"{}\"", shorten(f.name)));
      return false;
    }
    last_key_ = k;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error = fmt::format("invalid JSON at byte {}: {}", position == 0 ? 0 : position - 1, ex.what());
    return false;
  }

  std::string error;

 private:
  struct Frame {
    bool is_object;
    std::string name;  // key of this value in its parent object ("" for arrays' elements)
    std::unordered_set<std::string> keys;
  };
  static std::string shorten(const std::string& s) {
    return s.size() <= 80 ? s : s.substr(0, 80) + "...";
  }
  bool open(bool is_object) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      error = fmt::format("JSON nesting deeper than {} levels", max_depth_);
      return false;
    }
    std::string name;
    if (!stack_.empty() && stack_.back().is_object) name = last_key_;
    stack_.push_back(Frame{is_object, std::move(name), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  int max_depth_;
  std::vector<Frame> stack_;
  std::string last_key_;
};

}  // namespace strict_json_detail

// Parses `text` as exactly one JSON value (surrounding whitespace allowed). Errors are
// invalid_argument, prefixed with `what`: a syntax error or invalid UTF-8 (with its byte offset),
// a repeated key (named, with the key of the object holding it), nesting deeper than max_depth.
inline Result<nlohmann::json> parse_strict_json(std::string_view text, std::string_view what,
                                                int max_depth = 64) {
  strict_json_detail::Checker checker(max_depth);
  const bool ok = nlohmann::json::sax_parse(text.begin(), text.end(), &checker,
                                            nlohmann::json::input_format_t::json,
                                            /*strict=*/true, /*ignore_comments=*/false);
  if (!ok || !checker.error.empty()) {
    return invalid_argument("{}: {}", what, checker.error.empty() ? "invalid JSON" : checker.error);
  }
  nlohmann::json out = nlohmann::json::parse(text.begin(), text.end(), nullptr,
                                             /*allow_exceptions=*/false);
  if (out.is_discarded()) return invalid_argument("{}: invalid JSON", what);
  return out;
}

}  // namespace pagoda
