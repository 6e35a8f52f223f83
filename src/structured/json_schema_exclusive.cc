#include "structured/json_schema_exclusive.h"

#include <algorithm>
#include <string>
#include <vector>

namespace pagoda::structured::json_schema_detail {
namespace {

constexpr int kMaxSummaryDepth = 16;  // $ref / combinator nesting followed per branch

// What a schema says about the values it accepts: each field is an over-approximation.
struct Summary {
  uint8_t types = kAllTypes;
  bool limited = false;             // values holds every value it can accept
  std::vector<const Json*> values;  // (when limited)
  struct Tag {                      // a required property limited to `values`
    std::string property;
    std::vector<const Json*> values;
  };
  std::vector<Tag> tags;
  std::vector<std::string> required;  // properties an object must have
  bool closed = false;                // an object may have only the keys in `keys`
  std::vector<std::string> keys;      // (when closed)
};

bool has(const std::vector<std::string>& set, const std::string& s) {
  return std::find(set.begin(), set.end(), s) != set.end();
}

bool contains(const std::vector<const Json*>& set, const Json& v) {
  for (const Json* x : set) {
    if (json_equal(*x, v)) return true;
  }
  return false;
}

bool intersect(const std::vector<const Json*>& a, const std::vector<const Json*>& b) {
  for (const Json* x : a) {
    if (contains(b, *x)) return true;
  }
  return false;
}

void limit_to(Summary& s, std::vector<const Json*> values) {
  if (s.limited) {
    std::erase_if(values, [&](const Json* v) { return !contains(s.values, *v); });
  }
  s.limited = true;
  s.values = std::move(values);
  uint8_t types = 0;
  for (const Json* v : s.values)
    types |= value_type_bit(*v);
  s.types &= types;
}

// Both hold (a conjunction).
void meet(Summary& s, Summary other) {
  s.types &= other.types;
  if (other.limited) limit_to(s, std::move(other.values));
  for (Summary::Tag& t : other.tags)
    s.tags.push_back(std::move(t));
  for (std::string& r : other.required)
    s.required.push_back(std::move(r));
  if (other.closed) {
    if (s.closed) {
      std::erase_if(s.keys, [&](const std::string& k) { return !has(other.keys, k); });
    } else {
      s.closed = true;
      s.keys = std::move(other.keys);
    }
  }
}

// Either holds (a union).
Summary join(const std::vector<Summary>& parts) {
  Summary out;
  out.types = 0;
  out.limited = true;
  for (const Summary& p : parts) {
    out.types |= p.types;
    if (!p.limited) out.limited = false;
    if (out.limited) out.values.insert(out.values.end(), p.values.begin(), p.values.end());
  }
  if (!out.limited) out.values.clear();
  out.closed = !parts.empty();
  for (const Summary& p : parts) {
    if (!p.closed) out.closed = false;
    if (out.closed) out.keys.insert(out.keys.end(), p.keys.begin(), p.keys.end());
  }
  if (!out.closed) out.keys.clear();
  if (!parts.empty()) {
    for (const std::string& r : parts[0].required) {
      if (std::all_of(parts.begin() + 1, parts.end(),
                      [&](const Summary& p) { return has(p.required, r); }))
        out.required.push_back(r);
    }
  }
  // A tag survives when every part limits that property (to the union of their values).
  if (!parts.empty()) {
    for (const Summary::Tag& t : parts[0].tags) {
      Summary::Tag merged{t.property, t.values};
      bool everywhere = true;
      for (size_t i = 1; i < parts.size() && everywhere; ++i) {
        bool found = false;
        for (const Summary::Tag& u : parts[i].tags) {
          if (u.property != t.property) continue;
          merged.values.insert(merged.values.end(), u.values.begin(), u.values.end());
          found = true;
          break;
        }
        everywhere = found;
      }
      if (everywhere) out.tags.push_back(std::move(merged));
    }
  }
  return out;
}

// The compiler refuses a type it does not know; stay unconstrained here.
uint8_t type_bits(const Json& type) {
  const auto one = [](const Json& t) -> uint8_t {
    if (!t.is_string()) return kAllTypes;
    return type_name_bit(t.get_ref<const std::string&>()).value_or(kAllTypes);
  };
  if (!type.is_array()) return one(type);
  uint8_t bits = 0;
  for (const Json& t : type)
    bits |= one(t);
  return bits;
}

Summary summarize(const Json& node, const RefResolver& resolve, int depth) {
  Summary s;
  if (node.is_boolean()) {
    if (!node.get<bool>()) s.types = 0;
    return s;
  }
  if (!node.is_object() || depth > kMaxSummaryDepth) return s;
  if (find_key(node, "$ref") != nullptr) {
    if (const Json* target = resolve(node); target != nullptr)
      meet(s, summarize(*target, resolve, depth + 1));
  }
  if (const Json* all = find_key(node, "allOf"); all != nullptr && all->is_array()) {
    for (const Json& m : *all)
      meet(s, summarize(m, resolve, depth + 1));
  }
  for (const char* keyword : {"anyOf", "oneOf"}) {
    const Json* any = find_key(node, keyword);
    if (any == nullptr || !any->is_array() || any->empty()) continue;
    std::vector<Summary> parts;
    for (const Json& m : *any)
      parts.push_back(summarize(m, resolve, depth + 1));
    meet(s, join(parts));
  }
  if (const Json* type = find_key(node, "type"); type != nullptr) {
    uint8_t bits = type_bits(*type);
    const Json* nullable = find_key(node, "nullable");
    if (nullable != nullptr && nullable->is_boolean() && nullable->get<bool>()) bits |= kNull;
    s.types &= bits;
  }
  if (const Json* c = find_key(node, "const"); c != nullptr) limit_to(s, {c});
  if (const Json* e = find_key(node, "enum"); e != nullptr && e->is_array()) {
    std::vector<const Json*> values;
    for (const Json& v : *e)
      values.push_back(&v);
    limit_to(s, std::move(values));
  }
  const Json* required = find_key(node, "required");
  const Json* properties = find_key(node, "properties");
  if (required != nullptr && required->is_array()) {
    for (const Json& name : *required) {
      if (name.is_string()) s.required.push_back(name.get<std::string>());
    }
  }
  const Json* additional = find_key(node, "additionalProperties");
  if (additional != nullptr && additional->is_boolean() && !additional->get<bool>() &&
      find_key(node, "patternProperties") == nullptr) {
    s.closed = true;
    if (properties != nullptr && properties->is_object()) {
      for (const auto& [key, value] : properties->get_ref<const Json::object_t&>())
        s.keys.push_back(key);
    }
  }
  if (required != nullptr && required->is_array() && properties != nullptr &&
      properties->is_object()) {
    for (const Json& name : *required) {
      if (!name.is_string()) continue;
      const Json* property = find_key(*properties, name.get_ref<const std::string&>());
      if (property == nullptr) continue;
      Summary p = summarize(*property, resolve, depth + 1);
      if (p.limited) s.tags.push_back({name.get<std::string>(), std::move(p.values)});
    }
  }
  return s;
}

bool exclusive(const Summary& a, const Summary& b) {
  const uint8_t common = a.types & b.types;
  if (common == 0) return true;
  if (a.limited && b.limited && !intersect(a.values, b.values)) return true;
  // A value both accept is an object: a required property each limits to disjoint values.
  if (common == kObject) {
    // One requires a key the other, closed, does not allow.
    for (const auto& [x, y] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      if (!x->closed) continue;
      for (const std::string& r : y->required) {
        if (!has(x->keys, r)) return true;
      }
    }
    for (const Summary::Tag& t : a.tags) {
      for (const Summary::Tag& u : b.tags) {
        if (t.property == u.property && !intersect(t.values, u.values)) return true;
      }
    }
  }
  return false;
}

}  // namespace

std::optional<std::pair<size_t, size_t>> first_overlapping_branches(const Json& branches,
                                                                    const RefResolver& resolve) {
  std::vector<Summary> summaries;
  for (const Json& b : branches)
    summaries.push_back(summarize(b, resolve, 0));
  for (size_t i = 0; i < summaries.size(); ++i) {
    for (size_t j = i + 1; j < summaries.size(); ++j) {
      if (!exclusive(summaries[i], summaries[j])) return std::make_pair(i, j);
    }
  }
  return std::nullopt;
}

}  // namespace pagoda::structured::json_schema_detail
