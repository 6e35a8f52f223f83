#include "router/config_fields.h"

#include <charconv>
#include <cmath>
#include <set>

namespace pagoda::router {

namespace {
constexpr size_t kMaxNameBytes = 256;
}  // namespace

Status check_keys(const YAML::Node& node, const std::string& where,
                  std::initializer_list<std::string_view> allowed) {
  if (!node.IsMap()) {
    return invalid_argument("{}: must be a mapping", where.empty() ? "config" : where);
  }
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return invalid_argument("{}: keys must be strings", where);
    std::string key = kv.first.Scalar();
    std::string path = where.empty() ? key : where + "." + key;
    bool known = false;
    for (std::string_view a : allowed)
      known = known || a == key;
    if (!known) return invalid_argument("{}: unknown key", path);
    if (!seen.insert(key).second) return invalid_argument("{}: duplicate key", path);
  }
  return Status();
}

Result<std::string> get_string(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) return invalid_argument("{}: must be a string", path);
  const std::string& s = node.Scalar();
  if (s.size() > 4096) return invalid_argument("{}: longer than 4096 bytes", path);
  return s;
}

Result<std::string> get_name(const YAML::Node& node, const std::string& path) {
  PAGODA_ASSIGN_OR_RETURN(std::string s, get_string(node, path));
  if (s.empty() || s.size() > kMaxNameBytes) {
    return invalid_argument("{}: must be 1 to {} bytes", path, kMaxNameBytes);
  }
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return invalid_argument("{}: contains a control character", path);
  }
  return s;
}

Result<uint64_t> get_uint(const YAML::Node& node, const std::string& path, uint64_t min,
                          uint64_t max) {
  if (!node.IsScalar()) return invalid_argument("{}: must be an integer", path);
  const std::string& s = node.Scalar();
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return invalid_argument("{}: must be an integer, got '{}'", path, s.substr(0, 64));
  }
  if (v < min || v > max) return invalid_argument("{}: must be in [{}, {}]", path, min, max);
  return v;
}

Result<double> get_positive_double(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar()) return invalid_argument("{}: must be a number", path);
  const std::string& s = node.Scalar();
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v <= 0 ||
      v > 1e6) {
    return invalid_argument("{}: must be a number in (0, 1e6], got '{}'", path, s.substr(0, 64));
  }
  return v;
}

Result<bool> get_bool(const YAML::Node& node, const std::string& path) {
  if (!node.IsScalar() || (node.Scalar() != "true" && node.Scalar() != "false")) {
    return invalid_argument("{}: must be true or false", path);
  }
  return node.Scalar() == "true";
}

}  // namespace pagoda::router
