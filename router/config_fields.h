// Typed readers of YAML nodes for the router's config parsers (router_config.cc, ladder_config.cc).
// Every error names the key path ("ladder.levels[2].queue_length: ..."); nothing throws past
// these (yaml-cpp's own exceptions are caught by parse_router_config).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <yaml-cpp/yaml.h>

#include "pagoda/status.h"

namespace pagoda::router {

// `node` must be a mapping whose keys are all in `allowed`, none twice.
Status check_keys(const YAML::Node& node, const std::string& where,
                  std::initializer_list<std::string_view> allowed);
// A scalar of at most 4096 bytes.
Result<std::string> get_string(const YAML::Node& node, const std::string& path);
// A scalar of 1 to 256 bytes without control characters.
Result<std::string> get_name(const YAML::Node& node, const std::string& path);
Result<uint64_t> get_uint(const YAML::Node& node, const std::string& path, uint64_t min,
                          uint64_t max);
// A finite number in (0, 1e6].
Result<double> get_positive_double(const YAML::Node& node, const std::string& path);
Result<bool> get_bool(const YAML::Node& node, const std::string& path);

}  // namespace pagoda::router
