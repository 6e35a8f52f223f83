// JsonFields: typed optional fields of one JSON object from a model directory's files, shared by
// the config parsers of this folder (hf_config.cc, hf_quant_config.cc). Null counts as absent, as
// in transformers; a present field of the wrong type is invalid_argument naming the file and the
// field (with its prefix, e.g. "rope_scaling.factor"). Private to format/.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace pagoda::format {

inline std::string shorten(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() <= 80 ? s : s.substr(0, 80) + "...";
}

// Typed optional fields of one JSON object; errors name `file` and the field.
class Fields {
 public:
  Fields(const nlohmann::json& obj, std::string_view file, std::string prefix = "")
      : obj_(obj), file_(file), prefix_(std::move(prefix)) {}

  const nlohmann::json* get(std::string_view key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  Status wrong(std::string_view key, const nlohmann::json& v, std::string_view want) const {
    return invalid_argument("{}: {}{} is {}, not {}", file_, prefix_, key, shorten(v), want);
  }

  Status read(std::string_view key, std::optional<int64_t>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (!v->is_number_integer()) return wrong(key, *v, "an integer");
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      return wrong(key, *v, "an integer in range");
    }
    out = v->get<int64_t>();
    return Status();
  }
  Status read(std::string_view key, std::optional<double>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (!v->is_number()) return wrong(key, *v, "a number");
    out = v->get<double>();
    return Status();
  }
  Status read(std::string_view key, std::optional<bool>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (!v->is_boolean()) return wrong(key, *v, "true or false");
    out = v->get<bool>();
    return Status();
  }
  Status read(std::string_view key, std::optional<std::string>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (!v->is_string()) return wrong(key, *v, "a string");
    out = v->get<std::string>();
    return Status();
  }
  // An integer or a list of integers.
  Status read(std::string_view key, std::vector<int64_t>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (v->is_number_integer()) {
      out.push_back(v->get<int64_t>());
      return Status();
    }
    if (!v->is_array()) return wrong(key, *v, "an integer or a list of integers");
    for (const nlohmann::json& e : *v) {
      if (!e.is_number_integer()) return wrong(key, *v, "an integer or a list of integers");
      out.push_back(e.get<int64_t>());
    }
    return Status();
  }
  // A list of numbers.
  Status read(std::string_view key, std::vector<double>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (!v->is_array()) return wrong(key, *v, "a list of numbers");
    for (const nlohmann::json& e : *v) {
      if (!e.is_number()) return wrong(key, *v, "a list of numbers");
      out.push_back(e.get<double>());
    }
    return Status();
  }
  // A list of strings.
  Status read(std::string_view key, std::vector<std::string>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (!v->is_array()) return wrong(key, *v, "a list of strings");
    for (const nlohmann::json& e : *v) {
      if (!e.is_string()) return wrong(key, *v, "a list of strings");
      out.push_back(e.get<std::string>());
    }
    return Status();
  }
  // A token: a string, or an AddedToken dict {"content": ...}.
  Status read_token(std::string_view key, std::optional<std::string>& out) const {
    const nlohmann::json* v = get(key);
    if (v == nullptr) return Status();
    if (v->is_string()) {
      out = v->get<std::string>();
      return Status();
    }
    if (v->is_object()) {
      auto it = v->find("content");
      if (it != v->end() && it->is_string()) {
        out = it->get<std::string>();
        return Status();
      }
    }
    return wrong(key, *v, "a string or an AddedToken with a string \"content\"");
  }

 private:
  const nlohmann::json& obj_;
  std::string_view file_;
  std::string prefix_;
};

}  // namespace pagoda::format
