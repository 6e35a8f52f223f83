// oneOf exclusivity: a oneOf compiles as the union of its branches, which is exact only when no
// JSON value matches two branches. This decides that soundly (never "exclusive" when a value
// could match two) but incompletely, from what a schema says about a value without compiling
// it: the JSON types it allows, the const/enum values it is limited to, and the const/enum
// values of its required properties (the "discriminator" of tagged unions). $ref, allOf and
// nested anyOf/oneOf are followed; anything else leaves a branch unconstrained.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <utility>

#include "structured/json_schema_compiler.h"

namespace pagoda::structured::json_schema_detail {

// Maps a schema object that has "$ref" to its target (nullptr when it cannot be resolved).
using RefResolver = std::function<const Json*(const Json& node)>;

// The first pair of branches (i < j) of the array `branches` that some value may match both of;
// nullopt when every pair excludes each other.
std::optional<std::pair<size_t, size_t>> first_overlapping_branches(const Json& branches,
                                                                    const RefResolver& resolve);

}  // namespace pagoda::structured::json_schema_detail
