// JSON Schema → Grammar: parsing, keywords, the conjunction walk (allOf, anyOf/oneOf, $ref) and
// the entry points. Enums, strings and numbers are in json_schema_scalars.cc, objects and arrays in
// json_schema_containers.cc, string regexes in json_schema_strings.cc, integer ranges in
// json_number_range.cc; json_schema_compiler.h has the design.
#include "structured/json_schema.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <new>
#include <unordered_set>

#include <fmt/format.h>

#include "structured/json_schema_compiler.h"
#include "structured/json_schema_exclusive.h"
#include "structured/json_schema_strings.h"

namespace pagoda::structured {
namespace json_schema_detail {
namespace {

// ---------------------------------------------------------------------------------------------
// Parsing: nlohmann's SAX parser building an ordered_json, with duplicate keys refused (the
// vector-backed ordered_map would otherwise check each insertion linearly).

class OrderedSax final : public nlohmann::json_sax<Json> {
 public:
  explicit OrderedSax(int max_depth) : max_depth_(max_depth) {}

  bool null() override { return put(Json(nullptr)) != nullptr; }
  bool boolean(bool v) override { return put(Json(v)) != nullptr; }
  bool number_integer(number_integer_t v) override { return put(Json(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) override { return put(Json(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t&) override { return put(Json(v)) != nullptr; }
  bool string(string_t& v) override { return put(Json(std::move(v))) != nullptr; }
  bool binary(binary_t&) override {
    error = "binary values are not JSON";
    return false;
  }
  bool start_object(std::size_t) override { return open(Json::object()); }
  bool start_array(std::size_t) override { return open(Json::array()); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (!keys_.back().insert(k).second) {
      error = fmt::format("duplicate key \"{}\"", k.size() <= 80 ? k : k.substr(0, 80) + "...");
      return false;
    }
    pending_key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error = fmt::format("invalid JSON at byte {}: {}", position == 0 ? 0 : position - 1, ex.what());
    return false;
  }

  Json root;
  std::string error;

 private:
  Json* put(Json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Json* parent = stack_.back();
    if (parent->is_array()) {
      auto& array = parent->get_ref<Json::array_t&>();
      array.push_back(std::move(v));
      return &array.back();
    }
    auto& object = parent->get_ref<Json::object_t&>();
    // Keys were checked for repeats: append without ordered_map's linear search.
    static_cast<Json::object_t::Container&>(object).emplace_back(std::move(pending_key_),
                                                                 std::move(v));
    return &object.back().second;
  }
  bool open(Json v) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      error = fmt::format("nesting deeper than {} levels", max_depth_);
      return false;
    }
    Json* p = put(std::move(v));
    stack_.push_back(p);
    keys_.emplace_back();
    return true;
  }
  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    return true;
  }

  int max_depth_;
  std::vector<Json*> stack_;
  std::vector<std::unordered_set<std::string>> keys_;
  std::string pending_key_;
};

Status check_keywords(const Part& part) {
  for (const auto& [k, v] : part.node->get_ref<const Json::object_t&>()) {
    if (!keyword_kind(k)) {
      return invalid_argument("json_schema: keyword '{}' at {} is not supported", shorten(k),
                              display_pointer(part.pointer));
    }
  }
  return Status();
}

bool consumed_kind(Kw kind, uint8_t consumed) {
  return (kind == Kw::kAllOf && (consumed & kConsumedAllOf)) ||
         (kind == Kw::kAnyOf && (consumed & kConsumedAnyOf)) ||
         (kind == Kw::kOneOf && (consumed & kConsumedOneOf)) ||
         (kind == Kw::kRef && (consumed & kConsumedRef));
}

Result<uint8_t> type_bit(const Json& name, const std::string& pointer) {
  if (name.is_string()) {
    if (auto bit = type_name_bit(name.get_ref<const std::string&>())) return *bit;
  }
  return invalid_argument("json_schema: 'type' at {} names no JSON Schema type ({})",
                          display_pointer(pointer), shorten(name.dump()));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Keywords and values.

std::optional<Kw> keyword_kind(std::string_view k) {
  static const std::unordered_map<std::string_view, Kw> kTable = {
      {"title", Kw::kAnnotation},
      {"description", Kw::kAnnotation},
      {"examples", Kw::kAnnotation},
      {"default", Kw::kAnnotation},
      {"$schema", Kw::kAnnotation},
      {"$id", Kw::kAnnotation},
      {"$comment", Kw::kAnnotation},
      {"deprecated", Kw::kAnnotation},
      {"readOnly", Kw::kAnnotation},
      {"writeOnly", Kw::kAnnotation},
      {"discriminator", Kw::kAnnotation},
      {"$defs", Kw::kAnnotation},
      {"definitions", Kw::kAnnotation},
      {"nullable", Kw::kNullable},
      {"type", Kw::kType},
      {"enum", Kw::kEnum},
      {"const", Kw::kConst},
      {"allOf", Kw::kAllOf},
      {"anyOf", Kw::kAnyOf},
      {"oneOf", Kw::kOneOf},
      {"$ref", Kw::kRef},
      {"properties", Kw::kObject},
      {"required", Kw::kObject},
      {"additionalProperties", Kw::kObject},
      {"minProperties", Kw::kObject},
      {"maxProperties", Kw::kObject},
      {"items", Kw::kArray},
      {"prefixItems", Kw::kArray},
      {"additionalItems", Kw::kArray},
      {"minItems", Kw::kArray},
      {"maxItems", Kw::kArray},
      {"uniqueItems", Kw::kArray},
      {"minLength", Kw::kString},
      {"maxLength", Kw::kString},
      {"pattern", Kw::kString},
      {"format", Kw::kString},
      {"minimum", Kw::kNumber},
      {"maximum", Kw::kNumber},
      {"exclusiveMinimum", Kw::kNumber},
      {"exclusiveMaximum", Kw::kNumber},
      {"multipleOf", Kw::kNumber},
  };
  // Validation keywords of some JSON Schema draft that the grammar does not enforce: refused
  // (a schema using one would otherwise be accepted and its constraint ignored).
  static const std::unordered_set<std::string_view> kUnsupported = {"not",
                                                                    "if",
                                                                    "then",
                                                                    "else",
                                                                    "patternProperties",
                                                                    "propertyNames",
                                                                    "dependencies",
                                                                    "dependentRequired",
                                                                    "dependentSchemas",
                                                                    "contains",
                                                                    "minContains",
                                                                    "maxContains",
                                                                    "unevaluatedProperties",
                                                                    "unevaluatedItems",
                                                                    "$dynamicRef",
                                                                    "$recursiveRef",
                                                                    "$dynamicAnchor",
                                                                    "$recursiveAnchor",
                                                                    "$anchor",
                                                                    "extends",
                                                                    "disallow",
                                                                    "divisibleBy",
                                                                    "contentSchema"};
  auto it = kTable.find(k);
  if (it != kTable.end()) return it->second;
  if (kUnsupported.count(k) != 0) return std::nullopt;
  // Any other keyword ("id" of draft 4, "x-..." extensions, "example", editor hints) validates
  // nothing: an annotation, as JSON Schema 2020-12 (section 4.3.1) and validators treat it.
  return Kw::kAnnotation;
}

std::string shorten(std::string_view s) {
  return s.size() <= 64 ? std::string(s) : std::string(s.substr(0, 64)) + "...";
}

std::optional<uint8_t> type_name_bit(std::string_view name) {
  if (name == "null") return kNull;
  if (name == "boolean") return kBool;
  if (name == "object") return kObject;
  if (name == "array") return kArray;
  if (name == "string") return kString;
  if (name == "integer") return kInteger;
  if (name == "number") return static_cast<uint8_t>(kInteger | kFraction);
  return std::nullopt;
}

uint8_t value_type_bit(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return kNull;
    case Json::value_t::boolean:
      return kBool;
    case Json::value_t::object:
      return kObject;
    case Json::value_t::array:
      return kArray;
    case Json::value_t::string:
      return kString;
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return kInteger;
    case Json::value_t::number_float: {
      const double d = v.get<double>();
      return std::isfinite(d) && d == std::floor(d) ? kInteger : kFraction;
    }
    default:
      return 0;
  }
}

// JSON equality as JSON Schema defines it: objects compare regardless of key order, numbers by
// value.
bool json_equal(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) return a == b;
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!json_equal(a[i], b[i])) return false;
    }
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& [k, v] : a.get_ref<const Json::object_t&>()) {
      const Json* other = find_key(b, k);
      if (other == nullptr || !json_equal(v, *other)) return false;
    }
    return true;
  }
  return a == b;
}

std::string join_alternatives(const std::vector<std::string>& alternatives) {
  if (alternatives.size() == 1) return alternatives[0];
  std::string out = "(?:";
  for (size_t i = 0; i < alternatives.size(); ++i) {
    if (i > 0) out += "|";
    out += alternatives[i];
  }
  return out + ")";
}

// ---------------------------------------------------------------------------------------------

Result<Json> parse_ordered_json(std::string_view text, std::string_view what, size_t max_bytes,
                                int max_depth) {
  if (text.size() > max_bytes)
    return invalid_argument("{}: {} bytes (limit {})", what, text.size(), max_bytes);
  OrderedSax sax(max_depth);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &sax, Json::input_format_t::json,
                         /*strict=*/true, /*ignore_comments=*/false);
  } catch (const std::exception& e) {
    return invalid_argument("{}: invalid JSON: {}", what, e.what());
  }
  if (!ok || !sax.error.empty())
    return invalid_argument("{}: {}", what, sax.error.empty() ? "invalid JSON" : sax.error);
  return std::move(sax.root);
}

std::string escape_pointer_token(std::string_view token) {
  std::string out;
  out.reserve(token.size());
  for (char c : token) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

const Json* find_key(const Json& object, std::string_view key) {
  for (const auto& [k, v] : object.get_ref<const Json::object_t&>()) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Seq::add_regex(std::string regex) {
  if (regex.empty()) return;
  if (!elems.empty() && elems.back().is_regex &&
      elems.back().regex.size() + regex.size() <= kMaxMergedRegexBytes) {
    elems.back().regex += regex;
    return;
  }
  elems.push_back(Elem{true, std::move(regex), {}});
}

void Seq::append(const Seq& other) {
  for (const Elem& e : other.elems) {
    if (e.is_regex) {
      add_regex(e.regex);
    } else {
      add_symbol(e.symbol);
    }
  }
}

Compiler::Compiler(const JsonSchemaOptions& options, const Json* root)
    : options_(options), root_(root), ws_(json_whitespace_regex(options)) {}

std::string Compiler::key(std::string_view name) const {
  return regex_escape(json_string_text(name)) + colon();
}

Status Compiler::check_budget() const {
  if (b_.num_rules() > kMaxGrammarRules / 2 || lexeme_bytes_ > kMaxLexemeBytes) {
    return invalid_argument(
        "json_schema: the schema needs too large a grammar ({} rules, {} bytes of lexemes)",
        b_.num_rules(), lexeme_bytes_);
  }
  return Status();
}

std::vector<Symbol> Compiler::to_symbols(const Seq& seq) {
  std::vector<Symbol> out;
  out.reserve(seq.elems.size());
  for (const Elem& e : seq.elems) {
    if (e.is_regex) {
      lexeme_bytes_ += e.regex.size();
      out.push_back(b_.lexeme(e.regex));
    } else {
      out.push_back(e.symbol);
    }
  }
  return out;
}

Symbol Compiler::as_symbol(const Seq& seq, std::string_view name) {
  if (seq.elems.size() == 1 && !seq.elems[0].is_regex) return seq.elems[0].symbol;
  if (seq.is_single_regex()) {
    lexeme_bytes_ += seq.elems[0].regex.size();
    return b_.lexeme(seq.elems[0].regex);
  }
  return b_.sequence(name, to_symbols(seq));
}

Seq Compiler::to_seq(Alts alts, std::string_view name) {
  if (alts.size() == 1) return std::move(alts[0]);
  std::vector<std::string> regexes;
  std::unordered_set<std::string_view> seen;
  std::vector<Seq> others;
  for (Seq& s : alts) {
    if (s.is_single_regex()) {
      if (seen.insert(s.elems[0].regex).second) regexes.push_back(s.elems[0].regex);
    } else {
      others.push_back(std::move(s));
    }
  }
  std::vector<Seq> merged;
  if (!regexes.empty()) merged.push_back(Seq::of_regex(join_alternatives(regexes)));
  for (Seq& s : others)
    merged.push_back(std::move(s));
  if (merged.size() == 1) return std::move(merged[0]);
  const int32_t rule = b_.add_rule(name);
  for (const Seq& s : merged)
    b_.add_alternative(rule, to_symbols(s));
  return Seq::of_symbol(b_.rule(rule));
}

// value ::= scalar | object | array, the objects and arrays holding any values.
Seq Compiler::any_value() {
  if (!any_value_) {
    any_value_ = b_.add_rule("any_value");
    any_object_ = b_.add_rule("any_object");
    any_array_ = b_.add_rule("any_array");
    const Symbol value = b_.rule(*any_value_);
    const std::string scalar = "(?:null|true|false|" + std::string(kNumberRegex) + "|" +
                               std::string(kJsonStringRegex) + ")";
    b_.add_alternative(*any_value_, {b_.lexeme(scalar)});
    b_.add_alternative(*any_value_, {b_.rule(*any_object_)});
    b_.add_alternative(*any_value_, {b_.rule(*any_array_)});
    // any_object ::= {} | { key: value (, key: value)* }
    const Symbol member =
        b_.sequence("any_member", {b_.lexeme(std::string(kJsonStringRegex) + colon()), value});
    const Symbol more_members = b_.star("any_members", {b_.lexeme(comma()), member});
    b_.add_alternative(*any_object_, {b_.lexeme(empty_object())});
    b_.add_alternative(*any_object_,
                       {b_.lexeme(lbrace()), member, more_members, b_.lexeme(rbrace())});
    const Symbol more_values = b_.star("any_values", {b_.lexeme(comma()), value});
    b_.add_alternative(*any_array_, {b_.lexeme(empty_array())});
    b_.add_alternative(*any_array_,
                       {b_.lexeme(lbracket()), value, more_values, b_.lexeme(rbracket())});
  }
  return Seq::of_symbol(b_.rule(*any_value_));
}

Seq Compiler::any_object() {
  any_value();
  return Seq::of_symbol(b_.rule(*any_object_));
}

Seq Compiler::any_array() {
  any_value();
  return Seq::of_symbol(b_.rule(*any_array_));
}

Result<int64_t> Compiler::read_count(const Part& part, std::string_view keyword) const {
  const Json* v = find_key(*part.node, keyword);
  if (v == nullptr) return int64_t{-1};
  if (v->is_number_unsigned()) {
    return static_cast<int64_t>(std::min<uint64_t>(v->get<uint64_t>(), kUnboundedCount));
  }
  if (v->is_number_integer() && v->get<int64_t>() >= 0)
    return std::min<int64_t>(v->get<int64_t>(), kUnboundedCount);
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d >= 0 && d == std::floor(d))
      return d >= static_cast<double>(kUnboundedCount) ? kUnboundedCount : static_cast<int64_t>(d);
  }
  return invalid_argument("json_schema: '{}' at {} must be a non-negative integer", keyword,
                          display_pointer(part.pointer));
}

// ---------------------------------------------------------------------------------------------
// $ref

Result<std::pair<const Json*, std::string>> Compiler::resolve_ref(const Part& part) {
  const Json* ref = find_key(*part.node, "$ref");
  const std::string at = display_pointer(part.pointer);
  if (ref == nullptr || !ref->is_string())
    return invalid_argument("json_schema: '$ref' at {} must be a string", at);
  const std::string& text = ref->get_ref<const std::string&>();
  if (text.empty() || text[0] != '#') {
    return invalid_argument(
        "json_schema: $ref '{}' at {} is not supported (only local references: #, "
        "#/$defs/name, #/definitions/name)",
        shorten(text), at);
  }
  // The fragment is percent-encoded (RFC 3986), then a JSON pointer (RFC 6901).
  std::string pointer;
  for (size_t i = 1; i < text.size(); ++i) {
    if (text[i] != '%') {
      pointer += text[i];
      continue;
    }
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (i + 2 >= text.size() + 0 || hex(text[i + 1]) < 0 || hex(text[i + 2]) < 0)
      return invalid_argument("json_schema: $ref '{}' at {} has a bad %-escape", shorten(text), at);
    pointer += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
    i += 2;
  }
  if (!pointer.empty() && pointer[0] != '/') {
    return invalid_argument("json_schema: $ref '{}' at {} is not supported (anchors)",
                            shorten(text), at);
  }
  const Json* node = root_;
  size_t pos = 0;
  while (pos < pointer.size()) {
    const size_t next = pointer.find('/', pos + 1);
    const std::string_view raw = std::string_view(pointer).substr(
        pos + 1, (next == std::string::npos ? pointer.size() : next) - pos - 1);
    std::string token;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '~') {
        token += raw[i];
      } else if (i + 1 < raw.size() && (raw[i + 1] == '0' || raw[i + 1] == '1')) {
        token += raw[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        return invalid_argument("json_schema: $ref '{}' at {} has a bad '~' escape", shorten(text),
                                at);
      }
    }
    const Json* child = nullptr;
    if (node->is_object()) {
      if (node->size() <= 16) {
        child = find_key(*node, token);
      } else {
        auto& index = key_index_[node];
        if (index.empty()) {
          for (const auto& [k, v] : node->get_ref<const Json::object_t&>())
            index.emplace(k, &v);
        }
        auto it = index.find(token);
        child = it == index.end() ? nullptr : it->second;
      }
    } else if (node->is_array()) {
      const bool digits = !token.empty() && token.size() <= 9 &&
                          token.find_first_not_of("0123456789") == std::string::npos &&
                          (token == "0" || token[0] != '0');
      if (digits && std::stoul(token) < node->size()) child = &(*node)[std::stoul(token)];
    }
    if (child == nullptr)
      return invalid_argument("json_schema: $ref '{}' at {} points to nothing", shorten(text), at);
    node = child;
    pos = next == std::string::npos ? pointer.size() : next;
  }
  return std::pair<const Json*, std::string>(node, pointer);
}

Symbol Compiler::ref_rule(const Json* target, const std::string& pointer) {
  auto it = ref_rules_.find(target);
  if (it != ref_rules_.end()) return b_.rule(it->second);
  const int32_t rule = b_.add_rule(pointer.empty() ? "root" : "#" + shorten(pointer));
  ref_rules_.emplace(target, rule);
  pending_refs_.push_back(PendingRef{target, pointer, rule});
  return b_.rule(rule);
}

// ---------------------------------------------------------------------------------------------
// The conjunction walk.

Result<Alts> Compiler::compile(Conj conj, int depth) {
  if (++num_calls_ > kMaxCompileCalls) {
    return invalid_argument(
        "json_schema: the schema is too complex ({} positions after expanding anyOf/oneOf and "
        "$ref; limit {})",
        num_calls_, kMaxCompileCalls);
  }
  const std::string where = display_pointer(conj.empty() ? std::string() : conj[0].pointer);
  if (depth > kMaxCompileDepth) {
    return invalid_argument(
        "json_schema: the schema at {} nests deeper than {} levels (through $ref or allOf)", where,
        kMaxCompileDepth);
  }
  PAGODA_RETURN_IF_ERROR(check_budget());
  int ref_hops = 0;
  size_t expanded = 0;  // parts before this index have been checked and their allOf expanded
  while (true) {
    // allOf: its branches join the conjunction; `true` drops out, `false` empties it.
    for (; expanded < conj.size(); ++expanded) {
      const Json& node = *conj[expanded].node;
      if (node.is_boolean()) {
        if (!node.get<bool>()) {
          empty_reason_ =
              fmt::format("the schema at {} is false", display_pointer(conj[expanded].pointer));
          return Alts{};
        }
        continue;
      }
      if (!node.is_object()) {
        return invalid_argument("json_schema: the schema at {} is not an object or a boolean",
                                display_pointer(conj[expanded].pointer));
      }
      PAGODA_RETURN_IF_ERROR(check_keywords(conj[expanded]));
      if (conj[expanded].consumed & kConsumedAllOf) continue;
      const Json* all_of = find_key(node, "allOf");
      if (all_of == nullptr) continue;
      if (!all_of->is_array() || all_of->empty()) {
        return invalid_argument("json_schema: 'allOf' at {} must be a non-empty array",
                                display_pointer(conj[expanded].pointer));
      }
      conj[expanded].consumed |= kConsumedAllOf;
      const std::string base = conj[expanded].pointer + "/allOf/";
      for (size_t i = 0; i < all_of->size(); ++i)
        conj.push_back(Part{&(*all_of)[i], base + std::to_string(i), 0});
      if (conj.size() > kMaxConjunction) {
        return invalid_argument(
            "json_schema: allOf at {} merges more than {} schemas (or $refs merge in a cycle)",
            where, kMaxConjunction);
      }
    }
    // Which parts still constrain, and is the position exactly one $ref?
    int num_constraining = 0;
    int pure_ref = -1;
    for (size_t i = 0; i < conj.size(); ++i) {
      if (!conj[i].node->is_object()) continue;
      bool constrains = false, only_ref = true;
      for (const auto& [k, v] : conj[i].node->get_ref<const Json::object_t&>()) {
        const Kw kind = *keyword_kind(k);
        if (kind == Kw::kAnnotation || kind == Kw::kNullable ||
            consumed_kind(kind, conj[i].consumed))
          continue;
        constrains = true;
        if (kind != Kw::kRef) only_ref = false;
      }
      if (!constrains) continue;
      ++num_constraining;
      if (only_ref) pure_ref = static_cast<int>(i);
    }
    if (num_constraining == 0) return Alts{any_value()};
    if (num_constraining == 1 && pure_ref >= 0) {
      PAGODA_ASSIGN_OR_RETURN(auto target, resolve_ref(conj[static_cast<size_t>(pure_ref)]));
      return Alts{Seq::of_symbol(ref_rule(target.first, target.second))};
    }
    // $refs beside other constraints are inlined (their targets join the conjunction).
    bool inlined = false;
    for (size_t i = 0; i < conj.size(); ++i) {
      if (!conj[i].node->is_object() || (conj[i].consumed & kConsumedRef) ||
          find_key(*conj[i].node, "$ref") == nullptr)
        continue;
      PAGODA_ASSIGN_OR_RETURN(auto target, resolve_ref(conj[i]));
      conj[i].consumed |= kConsumedRef;
      if (++ref_hops > kMaxRefHops || conj.size() >= kMaxConjunction) {
        return invalid_argument(
            "json_schema: $ref at {} is cyclic or too deep to merge with the keywords beside it",
            display_pointer(conj[i].pointer));
      }
      conj.push_back(Part{target.first, target.second, 0});
      inlined = true;
    }
    if (!inlined) break;
  }
  // anyOf / oneOf distribute: (A and anyOf[B, C]) = anyOf[A and B, A and C]. A oneOf must have
  // mutually exclusive branches (json_schema_exclusive.h), so it is their union.
  for (size_t i = 0; i < conj.size(); ++i) {
    if (!conj[i].node->is_object()) continue;
    for (const auto& [keyword, flag] :
         {std::pair<std::string_view, uint8_t>{"anyOf", kConsumedAnyOf},
          std::pair<std::string_view, uint8_t>{"oneOf", kConsumedOneOf}}) {
      if (conj[i].consumed & flag) continue;
      const Json* branches = find_key(*conj[i].node, keyword);
      if (branches == nullptr) continue;
      if (!branches->is_array() || branches->empty()) {
        return invalid_argument("json_schema: '{}' at {} must be a non-empty array", keyword,
                                display_pointer(conj[i].pointer));
      }
      if (flag == kConsumedOneOf && branches->size() > 1 &&
          checked_one_ofs_.insert(branches).second) {
        // Compiled as the union of its branches: exact only when no value matches two.
        const auto overlap = first_overlapping_branches(*branches, [this](const Json& node) {
          auto target = resolve_ref(Part{&node, "", 0});
          return target.ok() ? target->first : nullptr;
        });
        if (overlap) {
          return invalid_argument(
              "json_schema: keyword 'oneOf' at {}: branches {} and {} may both match a value "
              "(oneOf is supported when its branches exclude each other: different types, "
              "distinct const/enum values, or a required property with distinct const/enum "
              "values; anyOf accepts a value matching several)",
              display_pointer(conj[i].pointer), overlap->first, overlap->second);
        }
      }
      // Distributing over siblings multiplies work (anyOf inside allOf inside anyOf ...).
      if (conj.size() > 1) {
        num_distributed_ += static_cast<int64_t>(branches->size());
        if (num_distributed_ > kMaxDistributedBranches) {
          return invalid_argument(
              "json_schema: {} at {} multiplies the schema beyond {} combinations (anyOf/oneOf "
              "merged with sibling keywords or allOf)",
              keyword, display_pointer(conj[i].pointer), kMaxDistributedBranches);
        }
      }
      Conj base = conj;
      base[i].consumed |= flag;
      const std::string prefix = conj[i].pointer + "/" + std::string(keyword) + "/";
      Alts out;
      for (size_t b = 0; b < branches->size(); ++b) {
        Conj branch = base;
        branch.push_back(Part{&(*branches)[b], prefix + std::to_string(b), 0});
        PAGODA_ASSIGN_OR_RETURN(Alts alts, compile(std::move(branch), depth + 1));
        for (Seq& s : alts)
          out.push_back(std::move(s));
      }
      if (out.empty()) {
        empty_reason_ = fmt::format("no branch of {} at {} can match ({})", keyword,
                                    display_pointer(conj[i].pointer), empty_reason_);
      }
      return out;
    }
  }
  return leaf_alts(conj, depth);
}

// The conjunction without combinators: the type families, each with its keywords.
Result<Alts> Compiler::leaf_alts(const Conj& conj, int depth) {
  uint8_t types = kAllTypes;
  bool has_enum = false;
  std::string no_type_reason;
  for (const Part& part : conj) {
    if (!part.node->is_object()) continue;
    const Json* type = find_key(*part.node, "type");
    if (find_key(*part.node, "enum") != nullptr || find_key(*part.node, "const") != nullptr)
      has_enum = true;
    if (type == nullptr) continue;
    uint8_t allowed = 0;
    if (type->is_array()) {
      for (const Json& t : *type) {
        PAGODA_ASSIGN_OR_RETURN(uint8_t bit, type_bit(t, part.pointer));
        allowed |= bit;
      }
    } else {
      PAGODA_ASSIGN_OR_RETURN(uint8_t bit, type_bit(*type, part.pointer));
      allowed = bit;
    }
    const Json* nullable = find_key(*part.node, "nullable");
    if (nullable != nullptr) {
      if (!nullable->is_boolean())
        return invalid_argument("json_schema: 'nullable' at {} must be a boolean",
                                display_pointer(part.pointer));
      if (nullable->get<bool>()) allowed |= kNull;
    }
    if ((types & allowed) == 0 && types != 0) {
      no_type_reason = fmt::format("'type' at {} allows none of the types allowed beside it",
                                   display_pointer(part.pointer));
    }
    types &= allowed;
  }
  if (types == 0) {
    empty_reason_ = no_type_reason.empty() ? "no type is allowed" : no_type_reason;
    return Alts{};
  }
  if (has_enum) return enum_alts(conj, types);
  Alts out;
  if (types & kNull) out.push_back(Seq::of_regex("null"));
  if (types & kBool) out.push_back(Seq::of_regex("(?:true|false)"));
  std::string reason;
  auto add = [&](Result<Alts> family) -> Status {
    if (!family.ok()) return std::move(family).take_status();
    if (family->empty()) reason = empty_reason_;
    for (Seq& s : *family)
      out.push_back(std::move(s));
    return Status();
  };
  if (types & kObject) PAGODA_RETURN_IF_ERROR(add(object_alts(conj, depth)));
  if (types & kArray) PAGODA_RETURN_IF_ERROR(add(array_alts(conj, depth)));
  if (types & kString) PAGODA_RETURN_IF_ERROR(add(string_alts(conj)));
  if (types & (kInteger | kFraction)) PAGODA_RETURN_IF_ERROR(add(number_alts(conj, types)));
  if (out.empty()) empty_reason_ = reason;
  return out;
}

// ---------------------------------------------------------------------------------------------

Result<Grammar> Compiler::run() && {
  const Symbol start = ref_rule(root_, "");
  while (!pending_refs_.empty()) {
    PendingRef ref = std::move(pending_refs_.back());
    pending_refs_.pop_back();
    empty_reason_.clear();
    PAGODA_ASSIGN_OR_RETURN(Alts alts, compile(Conj{Part{ref.target, ref.pointer, 0}}, 0));
    if (alts.empty()) {
      if (ref.rule == start.id) {
        return invalid_argument("json_schema: no JSON value satisfies the schema ({})",
                                empty_reason_.empty() ? "it is unsatisfiable" : empty_reason_);
      }
      // Unsatisfiable target: an unproductive rule (pruned by the matcher).
      b_.add_alternative(ref.rule, {b_.rule(ref.rule)});
      continue;
    }
    for (const Seq& s : alts)
      b_.add_alternative(ref.rule, to_symbols(s));
    PAGODA_RETURN_IF_ERROR(check_budget());
  }
  PAGODA_ASSIGN_OR_RETURN(Grammar g, std::move(b_).build(start.id));
  // A $ref cycle without a base case derives no finite text: refuse it here.
  std::vector<std::vector<std::pair<size_t, size_t>>> uses(g.rules.size());
  std::vector<std::vector<size_t>> missing(g.rules.size());
  std::vector<bool> productive(g.rules.size(), false);
  std::vector<size_t> work;
  for (size_t r = 0; r < g.rules.size(); ++r) {
    missing[r].resize(g.rules[r].alternatives.size(), 0);
    for (size_t a = 0; a < g.rules[r].alternatives.size(); ++a) {
      for (const Symbol& s : g.rules[r].alternatives[a]) {
        if (s.kind != Symbol::Kind::kRule) continue;
        ++missing[r][a];
        uses[static_cast<size_t>(s.id)].emplace_back(r, a);
      }
      if (missing[r][a] == 0 && !productive[r]) {
        productive[r] = true;
        work.push_back(r);
      }
    }
  }
  while (!work.empty()) {
    const size_t x = work.back();
    work.pop_back();
    for (const auto& [r, a] : uses[x]) {
      if (--missing[r][a] == 0 && !productive[r]) {
        productive[r] = true;
        work.push_back(r);
      }
    }
  }
  if (!productive[static_cast<size_t>(g.start)]) {
    return invalid_argument(
        "json_schema: no finite JSON value satisfies the schema (a $ref cycle without a base "
        "case)");
  }
  return g;
}

Grammar Compiler::any_object_grammar() && {
  const Seq object = any_object();
  Result<Grammar> g = std::move(b_).build(object.elems[0].symbol.id);
  return std::move(g).value();
}

}  // namespace json_schema_detail

using json_schema_detail::Compiler;
using json_schema_detail::Json;

std::string json_whitespace_regex(const JsonSchemaOptions& options) {
  if (!options.flexible_whitespace || options.max_whitespace <= 0) return "";
  return fmt::format("( |\\r?\\n[ \\t]{{0,{}}})?", std::min(options.max_whitespace, 1024));
}

Result<Grammar> compile_json_schema(std::string_view schema, const JsonSchemaOptions& options) {
  if (options.max_whitespace < 0 || options.max_whitespace > 1024) {
    return invalid_argument("json_schema: max_whitespace {} is out of range [0, 1024]",
                            options.max_whitespace);
  }
  try {
    PAGODA_ASSIGN_OR_RETURN(Json root,
                            json_schema_detail::parse_ordered_json(schema, "json_schema"));
    return Compiler(options, &root).run();
  } catch (const std::bad_alloc&) {
    return resource_exhausted("json_schema: out of memory compiling the schema");
  } catch (const std::exception& e) {
    return invalid_argument("json_schema: {}", e.what());
  }
}

Result<Symbol> add_json_schema(GrammarBuilder& builder, std::string_view schema,
                               const JsonSchemaOptions& options) {
  PAGODA_ASSIGN_OR_RETURN(Grammar g, compile_json_schema(schema, options));
  return builder.embed(g);
}

Grammar json_object_grammar(const JsonSchemaOptions& options) {
  JsonSchemaOptions clamped = options;
  clamped.max_whitespace = std::clamp(options.max_whitespace, 0, 1024);
  return Compiler(clamped, nullptr).any_object_grammar();
}

}  // namespace pagoda::structured
