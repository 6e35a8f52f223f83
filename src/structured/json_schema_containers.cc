// JSON Schema objects and arrays → grammar rules (the compiler is described in
// json_schema_compiler.h).
//
// Objects: the properties come in schema order; a required one is always there, an optional
// one may be left out, so the members are any in-order subset containing the required ones.
// Two rule chains keep that linear in the number of properties:
//   R_i ("the members from i on, after a member was written"):  R_i ::= , kv_i R_{i+1} | R_{i+1}
//   S_i ("the members from i on, none written yet"):             S_i ::= kv_i R_{i+1} | S_{i+1}
// (a required property has only the first alternative, and runs of required properties are
// inlined). Extra keys (additionalProperties) come after the known ones: `(, key: value)*`,
// each key a string that is none of the known names.
//
// Arrays: prefixItems are positions 0..K-1, each optional once minItems is met; after them the
// items schema repeats up to maxItems (GrammarBuilder::repeat).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "structured/json_schema_compiler.h"
#include "structured/json_schema_strings.h"

namespace pagoda::structured::json_schema_detail {

namespace {

bool has_any_key(const Conj& conj, std::initializer_list<std::string_view> keys) {
  for (const Part& part : conj) {
    if (!part.node->is_object()) continue;
    for (std::string_view k : keys) {
      if (find_key(*part.node, k) != nullptr) return true;
    }
  }
  return false;
}

}  // namespace

Result<Alts> Compiler::object_alts(const Conj& conj, int depth) {
  if (!has_any_key(conj, {"properties", "required", "additionalProperties", "minProperties",
                          "maxProperties"})) {
    return Alts{any_object()};
  }
  // Per part: its properties (indexed) and additionalProperties.
  struct ObjectPart {
    const Part* part;
    const Json* properties = nullptr;
    std::unordered_map<std::string_view, const Json*> index;
    const Json* additional = nullptr;
  };
  std::vector<ObjectPart> parts;
  std::vector<std::string_view> names;
  std::unordered_set<std::string_view> known;
  std::vector<std::string_view> required;
  std::unordered_set<std::string_view> required_set;
  int64_t min_properties = 0;
  int64_t max_properties = -1;
  const Part* min_part = nullptr;
  const Part* max_part = nullptr;
  bool any_properties_listed = false;
  for (const Part& part : conj) {
    if (!part.node->is_object()) continue;
    ObjectPart op{&part, nullptr, {}, nullptr};
    const std::string at = display_pointer(part.pointer);
    if (const Json* p = find_key(*part.node, "properties"); p != nullptr) {
      if (!p->is_object())
        return invalid_argument("json_schema: 'properties' at {} must be an object", at);
      any_properties_listed = true;
      op.properties = p;
      for (const auto& [name, schema] : p->get_ref<const Json::object_t&>()) {
        op.index.emplace(name, &schema);
        if (known.insert(name).second) names.push_back(name);
      }
    }
    if (const Json* a = find_key(*part.node, "additionalProperties"); a != nullptr) {
      if (!a->is_boolean() && !a->is_object()) {
        return invalid_argument(
            "json_schema: 'additionalProperties' at {} must be a boolean or a schema", at);
      }
      op.additional = a;
    }
    if (const Json* r = find_key(*part.node, "required"); r != nullptr) {
      if (!r->is_array())
        return invalid_argument("json_schema: 'required' at {} must be an array of strings", at);
      for (const Json& name : *r) {
        if (!name.is_string())
          return invalid_argument("json_schema: 'required' at {} must be an array of strings", at);
        const std::string& s = name.get_ref<const std::string&>();
        if (required_set.insert(s).second) required.push_back(s);
      }
    }
    PAGODA_ASSIGN_OR_RETURN(int64_t lo, read_count(part, "minProperties"));
    PAGODA_ASSIGN_OR_RETURN(int64_t hi, read_count(part, "maxProperties"));
    if (lo > min_properties) {
      min_properties = lo;
      min_part = &part;
    }
    if (hi >= 0 && hi < kUnboundedCount && (max_properties < 0 || hi < max_properties)) {
      max_properties = hi;
      max_part = &part;
    }
    parts.push_back(std::move(op));
  }
  // Required names that no part lists come after the listed ones (their values are governed by
  // additionalProperties).
  for (std::string_view name : required) {
    if (known.insert(name).second) names.push_back(name);
  }

  struct Member {
    std::string_view name;
    bool required;
    Seq kv;
  };
  std::vector<Member> members;
  for (std::string_view name : names) {
    Conj subs;
    bool forbidden = false;
    std::string forbidden_at;
    for (const ObjectPart& op : parts) {
      auto it = op.index.find(name);
      if (it != op.index.end()) {
        subs.push_back(
            Part{it->second, op.part->pointer + "/properties/" + escape_pointer_token(name), 0});
      } else if (op.additional != nullptr && op.additional->is_boolean()) {
        if (!op.additional->get<bool>()) {
          forbidden = true;
          forbidden_at = op.part->pointer;
        }
      } else if (op.additional != nullptr) {
        subs.push_back(Part{op.additional, op.part->pointer + "/additionalProperties", 0});
      }
    }
    const bool is_required = required_set.count(name) > 0;
    if (forbidden) {
      if (is_required) {
        empty_reason_ =
            fmt::format("required property '{}' is forbidden by additionalProperties false at {}",
                        name, display_pointer(forbidden_at));
        return Alts{};
      }
      continue;
    }
    Seq value;
    if (subs.empty()) {
      value = any_value();
    } else {
      PAGODA_ASSIGN_OR_RETURN(Alts alts, compile(std::move(subs), depth + 1));
      if (alts.empty()) {
        if (is_required) {
          empty_reason_ = fmt::format("required property '{}': {}", name, empty_reason_);
          return Alts{};
        }
        continue;  // the property can never be written
      }
      value = to_seq(std::move(alts), "value");
    }
    Seq kv = Seq::of_regex(key(name));
    kv.append(value);
    members.push_back(Member{name, is_required, std::move(kv)});
  }

  // Extra keys: forbidden if any part says false; else their values satisfy every part's
  // additionalProperties schema; with no part saying anything, the option's default applies to
  // schemas that list properties.
  bool extras_allowed = true;
  bool explicit_true = false;
  Conj extra_subs;
  for (const ObjectPart& op : parts) {
    if (op.additional == nullptr) continue;
    if (op.additional->is_boolean()) {
      if (!op.additional->get<bool>()) extras_allowed = false;
      explicit_true = explicit_true || op.additional->get<bool>();
    } else {
      extra_subs.push_back(Part{op.additional, op.part->pointer + "/additionalProperties", 0});
    }
  }
  if (extras_allowed && extra_subs.empty() && !explicit_true && any_properties_listed)
    extras_allowed = options().default_additional_properties;
  std::optional<Seq> extra_kv;
  if (extras_allowed) {
    Seq value;
    bool ok = true;
    if (extra_subs.empty()) {
      value = any_value();
    } else {
      PAGODA_ASSIGN_OR_RETURN(Alts alts, compile(std::move(extra_subs), depth + 1));
      if (alts.empty()) {
        ok = false;
      } else {
        value = to_seq(std::move(alts), "extra_value");
      }
    }
    if (ok) {
      std::vector<std::string> excluded(names.begin(), names.end());
      std::optional<std::string> key_regex =
          excluded.empty() ? std::nullopt : key_excluding_regex(excluded);
      Seq kv = Seq::of_regex((key_regex ? *key_regex : std::string(kJsonStringRegex)) + colon());
      kv.append(value);
      extra_kv = std::move(kv);
    }
  }

  // minProperties / maxProperties: only when the grammar already guarantees them.
  const auto num_required = static_cast<int64_t>(
      std::count_if(members.begin(), members.end(), [](const Member& m) { return m.required; }));
  if (max_properties >= 0 && max_properties < num_required) {
    empty_reason_ = fmt::format("maxProperties at {} is below the number of required properties",
                                display_pointer(max_part->pointer));
    return Alts{};
  }
  if (min_properties > num_required) {
    return invalid_argument(
        "json_schema: keyword 'minProperties' at {} is not supported (it exceeds the number of "
        "required properties)",
        display_pointer(min_part->pointer));
  }
  if (max_properties >= 0 && (extra_kv || static_cast<int64_t>(members.size()) > max_properties)) {
    return invalid_argument(
        "json_schema: keyword 'maxProperties' at {} is not supported (the object may have more "
        "properties)",
        display_pointer(max_part->pointer));
  }

  // The chains (see the top of the file).
  const size_t n = members.size();
  const std::string comma_regex = comma();
  Seq end;  // R_n
  std::optional<Seq> s_end;
  if (extra_kv) {
    Seq item = Seq::of_regex(comma_regex);
    item.append(*extra_kv);
    const Symbol more = builder().star("extra_members", to_symbols(item));
    end = Seq::of_symbol(more);
    Seq s = *extra_kv;
    s.add_symbol(more);
    s_end = std::move(s);
  }
  std::vector<std::optional<Symbol>> r_rule(n);
  // The comma-prefixed members from x on: the required run inlined, then R of the next optional.
  auto r_seq = [&](size_t x) {
    Seq s;
    size_t i = x;
    for (; i < n && members[i].required; ++i) {
      s.add_regex(comma_regex);
      s.append(members[i].kv);
    }
    s.append(i < n ? Seq::of_symbol(*r_rule[i]) : end);
    return s;
  };
  for (size_t i = n; i-- > 1;) {  // R_0 is never referenced (nothing comes before member 0)
    if (members[i].required) continue;
    const Seq rest = r_seq(i + 1);
    Seq with = Seq::of_regex(comma_regex);
    with.append(members[i].kv);
    with.append(rest);
    const int32_t rule = builder().add_rule("members_after");
    builder().add_alternative(rule, to_symbols(with));
    builder().add_alternative(rule, to_symbols(rest));
    r_rule[i] = builder().rule(rule);
  }
  size_t first_required = 0;
  while (first_required < n && !members[first_required].required)
    ++first_required;
  std::optional<Seq> s_cur;
  if (first_required < n) {
    Seq s = members[first_required].kv;
    s.append(r_seq(first_required + 1));
    s_cur = std::move(s);
  } else {
    s_cur = s_end;
  }
  for (size_t i = first_required; i-- > 0;) {
    Seq with = members[i].kv;
    with.append(r_seq(i + 1));
    const int32_t rule = builder().add_rule("members");
    builder().add_alternative(rule, to_symbols(with));
    if (s_cur) builder().add_alternative(rule, to_symbols(*s_cur));
    s_cur = Seq::of_symbol(builder().rule(rule));
  }
  Alts out;
  if (first_required == n) out.push_back(Seq::of_regex(empty_object()));
  if (s_cur) {
    Seq s = Seq::of_regex(lbrace());
    s.append(*s_cur);
    s.add_regex(rbrace());
    out.push_back(std::move(s));
  }
  return out;
}

Result<Alts> Compiler::array_alts(const Conj& conj, int depth) {
  if (!has_any_key(conj, {"items", "prefixItems", "additionalItems", "minItems", "maxItems",
                          "uniqueItems"})) {
    return Alts{any_array()};
  }
  struct ArrayPart {
    const Part* part;
    const Json* prefix = nullptr;  // array of schemas
    std::string prefix_pointer;
    const Json* tail = nullptr;  // schema for the positions after the prefix; null: any
    std::string tail_pointer;
  };
  std::vector<ArrayPart> parts;
  size_t num_prefix = 0;
  int64_t min = 0, max = -1;
  const Part* min_part = nullptr;
  const Part* max_part = nullptr;
  const Part* unique_part = nullptr;
  for (const Part& part : conj) {
    if (!part.node->is_object()) continue;
    const std::string at = display_pointer(part.pointer);
    ArrayPart ap{&part, nullptr, {}, nullptr, {}};
    const Json* prefix_items = find_key(*part.node, "prefixItems");
    const Json* items = find_key(*part.node, "items");
    const Json* additional_items = find_key(*part.node, "additionalItems");
    auto is_schema = [](const Json* j) { return j->is_boolean() || j->is_object(); };
    if (prefix_items != nullptr) {
      if (!prefix_items->is_array())
        return invalid_argument("json_schema: 'prefixItems' at {} must be an array", at);
      if (items != nullptr && !is_schema(items)) {
        return invalid_argument(
            "json_schema: 'items' at {} must be a schema when prefixItems is present", at);
      }
      ap.prefix = prefix_items;
      ap.prefix_pointer = part.pointer + "/prefixItems/";
      ap.tail = items;
      ap.tail_pointer = part.pointer + "/items";
    } else if (items != nullptr && items->is_array()) {
      // Draft 4-7 tuples: items as an array, additionalItems for the rest.
      if (additional_items != nullptr && !is_schema(additional_items)) {
        return invalid_argument("json_schema: 'additionalItems' at {} must be a schema", at);
      }
      ap.prefix = items;
      ap.prefix_pointer = part.pointer + "/items/";
      ap.tail = additional_items;
      ap.tail_pointer = part.pointer + "/additionalItems";
    } else if (items != nullptr) {
      if (!is_schema(items))
        return invalid_argument("json_schema: 'items' at {} must be a schema", at);
      ap.tail = items;
      ap.tail_pointer = part.pointer + "/items";
    }
    if (ap.prefix != nullptr) num_prefix = std::max(num_prefix, ap.prefix->size());
    PAGODA_ASSIGN_OR_RETURN(int64_t lo, read_count(part, "minItems"));
    PAGODA_ASSIGN_OR_RETURN(int64_t hi, read_count(part, "maxItems"));
    if (lo > min) {
      min = lo;
      min_part = &part;
    }
    if (hi >= 0 && hi < kUnboundedCount && (max < 0 || hi < max)) {
      max = hi;
      max_part = &part;
    }
    if (const Json* u = find_key(*part.node, "uniqueItems"); u != nullptr) {
      if (!u->is_boolean())
        return invalid_argument("json_schema: 'uniqueItems' at {} must be a boolean", at);
      if (u->get<bool>()) unique_part = &part;
    }
    parts.push_back(std::move(ap));
  }
  auto limit_max = [&max](int64_t v) {
    if (max < 0 || v < max) max = v;
  };
  // Positions 0..num_prefix-1, then the repeated tail.
  std::vector<Seq> prefix;
  for (size_t j = 0; j < num_prefix && (max < 0 || static_cast<int64_t>(j) < max); ++j) {
    Conj subs;
    for (const ArrayPart& ap : parts) {
      if (ap.prefix != nullptr && j < ap.prefix->size()) {
        subs.push_back(Part{&(*ap.prefix)[j], ap.prefix_pointer + std::to_string(j), 0});
      } else if (ap.tail != nullptr && ap.tail->is_boolean()) {
        if (!ap.tail->get<bool>()) limit_max(static_cast<int64_t>(j));
      } else if (ap.tail != nullptr) {
        subs.push_back(Part{ap.tail, ap.tail_pointer, 0});
      }
    }
    if (max >= 0 && static_cast<int64_t>(j) >= max) break;
    if (subs.empty()) {
      prefix.push_back(any_value());
      continue;
    }
    PAGODA_ASSIGN_OR_RETURN(Alts alts, compile(std::move(subs), depth + 1));
    if (alts.empty()) {
      limit_max(static_cast<int64_t>(j));
      break;
    }
    prefix.push_back(to_seq(std::move(alts), "item"));
  }
  const auto k = static_cast<int64_t>(prefix.size());
  std::optional<Seq> item;
  if (k == static_cast<int64_t>(num_prefix) && (max < 0 || max > k)) {
    Conj subs;
    bool forbidden = false;
    for (const ArrayPart& ap : parts) {
      if (ap.tail == nullptr) continue;
      if (ap.tail->is_boolean()) {
        forbidden = forbidden || !ap.tail->get<bool>();
      } else {
        subs.push_back(Part{ap.tail, ap.tail_pointer, 0});
      }
    }
    if (!forbidden) {
      if (subs.empty()) {
        item = any_value();
      } else {
        PAGODA_ASSIGN_OR_RETURN(Alts alts, compile(std::move(subs), depth + 1));
        if (!alts.empty()) item = to_seq(std::move(alts), "item");
      }
    }
  }
  if (!item) limit_max(k);
  if (max >= 0 && min > max) {
    empty_reason_ = fmt::format("minItems at {} cannot be met",
                                display_pointer(min_part != nullptr ? min_part->pointer : ""));
    return Alts{};
  }
  if (unique_part != nullptr && (max < 0 || max > 1)) {
    return invalid_argument("json_schema: keyword 'uniqueItems' at {} is not supported",
                            display_pointer(unique_part->pointer));
  }
  if (min > kMaxRepetition) {
    return invalid_argument("json_schema: keyword 'minItems' at {} is too large (limit {})",
                            display_pointer(min_part->pointer), kMaxRepetition);
  }
  if (max > kMaxRepetition) {
    return invalid_argument("json_schema: keyword 'maxItems' at {} is too large (limit {})",
                            display_pointer(max_part->pointer), kMaxRepetition);
  }
  const std::string comma_regex = comma();
  // T(j): the comma-prefixed elements from position j on.
  Seq tail;  // T(k) and beyond: the repeated items
  const int64_t first_tail = std::max<int64_t>(k, 1);
  if (item && (max < 0 || max > first_tail)) {
    Seq once = Seq::of_regex(comma_regex);
    once.append(*item);
    PAGODA_ASSIGN_OR_RETURN(
        Symbol repeated,
        builder().repeat("items", to_symbols(once), std::max<int64_t>(0, min - first_tail),
                         max < 0 ? -1 : max - first_tail));
    tail = Seq::of_symbol(repeated);
  }
  for (int64_t j = k - 1; j >= 1; --j) {
    if (max >= 0 && j >= max) continue;
    Seq inner = Seq::of_regex(comma_regex);
    inner.append(prefix[static_cast<size_t>(j)]);
    inner.append(tail);
    const int32_t rule = builder().add_rule("items_from");
    if (j >= min) builder().add_alternative(rule, {});
    builder().add_alternative(rule, to_symbols(inner));
    tail = Seq::of_symbol(builder().rule(rule));
  }
  Alts out;
  if (min == 0) out.push_back(Seq::of_regex(empty_array()));
  const Seq* first = k > 0 ? &prefix[0] : (item ? &*item : nullptr);
  if (max != 0 && first != nullptr) {
    Seq s = Seq::of_regex(lbracket());
    s.append(*first);
    s.append(tail);
    s.add_regex(rbracket());
    out.push_back(std::move(s));
  }
  if (out.empty()) empty_reason_ = "the array constraints cannot be met";
  return out;
}

}  // namespace pagoda::structured::json_schema_detail
