// JSON Schema scalars → regexes: enum/const values, strings (lengths, pattern, format) and
// numbers (bounds, multipleOf). See json_schema_compiler.h.
#include <algorithm>
#include <cmath>
#include <tuple>
#include <unordered_set>

#include <fmt/format.h>

#include "structured/json_number_range.h"
#include "structured/json_schema_compiler.h"
#include "structured/json_schema_strings.h"
#include "structured/regex.h"

namespace pagoda::structured::json_schema_detail {

// ---------------------------------------------------------------------------------------------
// enum / const

Status Compiler::value_regex(const Json& value, std::string& out, int depth) const {
  if (depth > kMaxSchemaDepth) return invalid_argument("json_schema: enum value nests too deeply");
  if (out.size() > kMaxEnumRegexBytes) return Status();  // the caller refuses
  switch (value.type()) {
    case Json::value_t::string:
      out += regex_escape(json_string_text(value.get_ref<const std::string&>()));
      return Status();
    case Json::value_t::array: {
      if (value.empty()) {
        out += empty_array();
        return Status();
      }
      out += lbracket();
      for (size_t i = 0; i < value.size(); ++i) {
        if (i > 0) out += comma();
        PAGODA_RETURN_IF_ERROR(value_regex(value[i], out, depth + 1));
      }
      out += rbracket();
      return Status();
    }
    case Json::value_t::object: {
      if (value.empty()) {
        out += empty_object();
        return Status();
      }
      out += lbrace();
      bool first = true;
      for (const auto& [k, v] : value.get_ref<const Json::object_t&>()) {
        if (!first) out += comma();
        first = false;
        out += key(k);
        PAGODA_RETURN_IF_ERROR(value_regex(v, out, depth + 1));
      }
      out += rbrace();
      return Status();
    }
    default:
      out += regex_escape(value.dump(-1, ' ', false, Json::error_handler_t::replace));
      return Status();
  }
}

Result<Alts> Compiler::enum_alts(const Conj& conj, uint8_t types) {
  std::optional<std::vector<const Json*>> values;
  for (const Part& part : conj) {
    if (!part.node->is_object()) continue;
    for (const auto& [k, v] : part.node->get_ref<const Json::object_t&>()) {
      const Kw kind = *keyword_kind(k);
      if (kind == Kw::kObject || kind == Kw::kArray || kind == Kw::kString || kind == Kw::kNumber) {
        return invalid_argument(
            "json_schema: keyword '{}' at {} together with enum/const is not supported", k,
            display_pointer(part.pointer));
      }
    }
    std::vector<const Json*> these;
    if (const Json* c = find_key(*part.node, "const"); c != nullptr) these.push_back(c);
    if (const Json* e = find_key(*part.node, "enum"); e != nullptr) {
      if (!e->is_array()) {
        return invalid_argument("json_schema: 'enum' at {} must be an array",
                                display_pointer(part.pointer));
      }
      if (!these.empty()) {
        // const and enum together: the const if the enum has it.
        const bool listed = std::any_of(e->begin(), e->end(),
                                        [&](const Json& v) { return json_equal(v, *these[0]); });
        if (!listed) these.clear();
      } else {
        for (const Json& v : *e)
          these.push_back(&v);
      }
    } else if (these.empty()) {
      continue;
    }
    if (!values) {
      values = std::move(these);
      continue;
    }
    if (values->size() * these.size() > 1000000) {
      return invalid_argument("json_schema: allOf at {} intersects enums too large to compare",
                              display_pointer(part.pointer));
    }
    std::vector<const Json*> kept;
    for (const Json* v : *values) {
      if (std::any_of(these.begin(), these.end(),
                      [&](const Json* w) { return json_equal(*v, *w); }))
        kept.push_back(v);
    }
    values = std::move(kept);
  }
  std::vector<std::string> regexes;
  std::unordered_set<std::string> seen;
  size_t total = 0;
  for (const Json* v : *values) {
    if ((value_type_bit(*v) & types) == 0) continue;
    std::string regex;
    PAGODA_RETURN_IF_ERROR(value_regex(*v, regex, 0));
    total += regex.size() + 1;
    if (total > kMaxEnumRegexBytes) {
      return invalid_argument("json_schema: enum at {} is too large ({} KiB of regex; limit {})",
                              display_pointer(conj[0].pointer), total / 1024,
                              kMaxEnumRegexBytes / 1024);
    }
    if (seen.insert(regex).second) regexes.push_back(std::move(regex));
  }
  if (regexes.empty()) {
    empty_reason_ = fmt::format("no enum/const value at {} has an allowed type",
                                display_pointer(conj[0].pointer));
    return Alts{};
  }
  return Alts{Seq::of_regex(join_alternatives(regexes))};
}

// ---------------------------------------------------------------------------------------------
// strings

Result<Alts> Compiler::string_alts(const Conj& conj) {
  int64_t min = 0;
  std::optional<int64_t> max;
  const Part* pattern_part = nullptr;
  const Json* pattern = nullptr;
  std::optional<StringContent> format;
  const Part* format_part = nullptr;
  const Part* min_part = nullptr;
  const Part* max_part = nullptr;
  for (const Part& part : conj) {
    if (!part.node->is_object()) continue;
    PAGODA_ASSIGN_OR_RETURN(int64_t lo, read_count(part, "minLength"));
    PAGODA_ASSIGN_OR_RETURN(int64_t hi, read_count(part, "maxLength"));
    if (lo > min) {
      min = lo;
      min_part = &part;
    }
    if (hi >= 0 && hi < kUnboundedCount && (!max || hi < *max)) {
      max = hi;
      max_part = &part;
    }
    if (const Json* p = find_key(*part.node, "pattern"); p != nullptr) {
      if (!p->is_string()) {
        return invalid_argument("json_schema: 'pattern' at {} must be a string",
                                display_pointer(part.pointer));
      }
      if (pattern != nullptr && *pattern != *p) {
        return invalid_argument(
            "json_schema: keyword 'pattern' at {}: two different patterns at one position "
            "(allOf) are not supported",
            display_pointer(part.pointer));
      }
      pattern = p;
      pattern_part = &part;
    }
    if (const Json* f = find_key(*part.node, "format"); f != nullptr) {
      if (!f->is_string()) {
        return invalid_argument("json_schema: 'format' at {} must be a string",
                                display_pointer(part.pointer));
      }
      const std::string& name = f->get_ref<const std::string&>();
      std::optional<StringContent> content = format_content(name);
      if (!content) {
        // A format JSON Schema defines that the grammar does not enforce is refused; another
        // (a custom name) is an annotation, as validators treat it.
        if (is_unenforced_standard_format(name)) {
          return invalid_argument(
              "json_schema: keyword 'format' at {}: format '{}' is not supported",
              display_pointer(part.pointer), name);
        }
        continue;
      }
      if (format && format->regex != content->regex) {
        return invalid_argument(
            "json_schema: keyword 'format' at {}: two different formats at one position are not "
            "supported",
            display_pointer(part.pointer));
      }
      format = std::move(content);
      format_part = &part;
    }
  }
  if (max && min > *max) {
    empty_reason_ = fmt::format("minLength at {} exceeds maxLength",
                                display_pointer(min_part != nullptr ? min_part->pointer : ""));
    return Alts{};
  }
  std::optional<StringContent> content;
  if (pattern != nullptr) {
    if (format) {
      return invalid_argument(
          "json_schema: keyword 'format' at {} together with 'pattern' is not supported",
          display_pointer(format_part->pointer));
    }
    Result<StringContent> translated = pattern_content(pattern->get_ref<const std::string&>());
    if (!translated.ok()) {
      return invalid_argument("json_schema: keyword 'pattern' at {}: {}",
                              display_pointer(pattern_part->pointer),
                              translated.status().message());
    }
    // The lexeme must compile: refuse here, naming the keyword, rather than at matcher build.
    Result<ByteNfa> nfa = compile_regex("\"" + translated->regex + "\"");
    if (!nfa.ok()) {
      return invalid_argument("json_schema: keyword 'pattern' at {}: {}",
                              display_pointer(pattern_part->pointer), nfa.status().message());
    }
    if (nfa->empty_language()) {
      empty_reason_ = fmt::format("the pattern at {} matches no JSON string",
                                  display_pointer(pattern_part->pointer));
      return Alts{};
    }
    content = std::move(*translated);
  } else if (format) {
    content = std::move(format);
  }
  if (content) {
    // Lengths can only be enforced when every match already satisfies them.
    if (min > content->min_length) {
      return invalid_argument(
          "json_schema: keyword 'minLength' at {} together with {} is not supported",
          display_pointer(min_part->pointer), pattern != nullptr ? "pattern" : "format");
    }
    if (max && (!content->max_length || *content->max_length > *max)) {
      return invalid_argument(
          "json_schema: keyword 'maxLength' at {} together with {} is not supported",
          display_pointer(max_part->pointer), pattern != nullptr ? "pattern" : "format");
    }
    return Alts{Seq::of_regex("\"" + content->regex + "\"")};
  }
  if (min == 0 && !max) return Alts{Seq::of_regex(std::string(kJsonStringRegex))};
  if ((max ? *max : min) <= kMaxLengthInRegex)
    return Alts{Seq::of_regex("\"" + length_content_regex(min, max) + "\"")};
  // Long strings: chunks of 64 code points as grammar repetitions around a short regex tail.
  // length = 64 a + b with b in [0, 63]: a = a_min → b >= b_min; a = a_max → b <= b_max.
  constexpr int64_t kChunk = 64;
  const int64_t a_min = min / kChunk, b_min = min % kChunk;
  const int64_t a_max = max ? *max / kChunk : -1;  // -1: unbounded
  const int64_t b_max = max ? *max % kChunk : 0;
  if (a_min > kMaxRepetition || (a_max >= 0 && a_max - a_min > kMaxRepetition)) {
    return invalid_argument(
        "json_schema: keyword '{}' at {} is too large (limit {})",
        a_min > kMaxRepetition ? "minLength" : "maxLength",
        display_pointer(a_min > kMaxRepetition ? min_part->pointer : max_part->pointer),
        kMaxRepetition * kChunk);
  }
  const Symbol chunk = b_.lexeme(length_content_regex(kChunk, kChunk));
  lexeme_bytes_ += kJsonCharRegex.size() + 16;
  auto tail = [&](int64_t lo, int64_t hi) {
    return Seq::of_regex(length_content_regex(lo, hi) + "\"");
  };
  Seq out = Seq::of_regex("\"");
  if (a_min > 0) {
    PAGODA_ASSIGN_OR_RETURN(Symbol prefix, b_.repeat("string_chunks", {chunk}, a_min, a_min));
    out.add_symbol(prefix);
  }
  Alts rest;
  rest.push_back(tail(b_min, a_max == a_min ? b_max : kChunk - 1));
  if (a_max < 0 || a_max - a_min >= 2) {
    PAGODA_ASSIGN_OR_RETURN(
        Symbol more, b_.repeat("string_chunks", {chunk}, 1, a_max >= 0 ? a_max - a_min - 1 : -1));
    Seq s = Seq::of_symbol(more);
    s.append(tail(0, kChunk - 1));
    rest.push_back(std::move(s));
  }
  if (a_max > a_min) {
    PAGODA_ASSIGN_OR_RETURN(Symbol last,
                            b_.repeat("string_chunks", {chunk}, a_max - a_min, a_max - a_min));
    Seq s = Seq::of_symbol(last);
    s.append(tail(0, b_max));
    rest.push_back(std::move(s));
  }
  out.append(to_seq(std::move(rest), "string_tail"));
  return Alts{std::move(out)};
}

// ---------------------------------------------------------------------------------------------
// numbers

namespace {

struct Bound {
  double value = 0;
  std::optional<int64_t> exact;  // the value when it is an integer within kMaxNumberBound
  bool exclusive = false;
  std::string_view keyword;
  const Part* part = nullptr;
};

Result<std::optional<Bound>> read_bound(const Part& part, std::string_view keyword,
                                        std::string_view exclusive_keyword) {
  const Json* v = find_key(*part.node, keyword);
  if (v == nullptr) return std::optional<Bound>();
  Bound b;
  b.keyword = keyword;
  b.part = &part;
  if (v->is_boolean()) {
    // Draft 4: exclusiveMinimum/Maximum as a flag on minimum/maximum; read with them.
    return std::optional<Bound>();
  }
  if (!v->is_number()) {
    return invalid_argument("json_schema: '{}' at {} must be a number", keyword,
                            display_pointer(part.pointer));
  }
  b.value = v->get<double>();
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u <= static_cast<uint64_t>(kMaxNumberBound)) b.exact = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    const int64_t i = v->get<int64_t>();
    if (i >= -kMaxNumberBound && i <= kMaxNumberBound) b.exact = i;
  } else if (std::isfinite(b.value) && b.value == std::floor(b.value) &&
             std::fabs(b.value) <= 9007199254740992.0) {
    b.exact = static_cast<int64_t>(b.value);
  }
  b.exclusive = keyword.starts_with("exclusive");
  if (!b.exclusive) {
    const Json* flag = find_key(*part.node, exclusive_keyword);
    if (flag != nullptr && flag->is_boolean()) b.exclusive = flag->get<bool>();
  }
  return std::optional<Bound>(b);
}

Status refuse_bound(const Bound& b, std::string_view why) {
  return invalid_argument("json_schema: keyword '{}' at {}: {}", b.keyword,
                          display_pointer(b.part->pointer), why);
}

}  // namespace

Result<Alts> Compiler::number_alts(const Conj& conj, uint8_t types) {
  std::vector<Bound> lower, upper;
  std::vector<std::pair<const Json*, const Part*>> multiples;
  for (const Part& part : conj) {
    if (!part.node->is_object()) continue;
    for (auto [keyword, flag, is_lower] :
         {std::tuple<std::string_view, std::string_view, bool>{"minimum", "exclusiveMinimum", true},
          {"exclusiveMinimum", "", true},
          {"maximum", "exclusiveMaximum", false},
          {"exclusiveMaximum", "", false}}) {
      PAGODA_ASSIGN_OR_RETURN(std::optional<Bound> b, read_bound(part, keyword, flag));
      if (b) (is_lower ? lower : upper).push_back(*b);
    }
    if (const Json* m = find_key(*part.node, "multipleOf"); m != nullptr) {
      if (!m->is_number() || !(m->get<double>() > 0)) {
        return invalid_argument("json_schema: 'multipleOf' at {} must be a positive number",
                                display_pointer(part.pointer));
      }
      multiples.emplace_back(m, &part);
    }
  }
  // multipleOf 1 only says "integer"; other multiples are enumerated within small ranges.
  std::vector<int64_t> steps;
  for (const auto& [m, part] : multiples) {
    const double k = m->get<double>();
    if (k == 1) {
      types &= static_cast<uint8_t>(~kFraction);
      continue;
    }
    if (k != std::floor(k) || k > 1e9 || (types & kFraction)) {
      return invalid_argument(
          "json_schema: keyword 'multipleOf' at {} is not supported (only multipleOf 1, or an "
          "integer step for integers within a small range)",
          display_pointer(part->pointer));
    }
    steps.push_back(static_cast<int64_t>(k));
  }
  if ((types & (kInteger | kFraction)) == 0) {
    empty_reason_ = "multipleOf 1 excludes the allowed number type";
    return Alts{};
  }
  if (types & kFraction) {
    // Numbers: only integer-valued bounds, enforced on the integer part and fraction.
    std::optional<int64_t> lo, hi;
    bool lo_excl = false, hi_excl = false;
    for (const Bound& b : lower) {
      if (!b.exact)
        return refuse_bound(b, "a non-integer or huge bound on a number is not supported");
      if (!lo || *b.exact > *lo || (*b.exact == *lo && b.exclusive)) {
        lo = b.exact;
        lo_excl = b.exclusive;
      }
    }
    for (const Bound& b : upper) {
      if (!b.exact)
        return refuse_bound(b, "a non-integer or huge bound on a number is not supported");
      if (!hi || *b.exact < *hi || (*b.exact == *hi && b.exclusive)) {
        hi = b.exact;
        hi_excl = b.exclusive;
      }
    }
    if (!lo && !hi) return Alts{Seq::of_regex(std::string(kNumberRegex))};
    std::optional<std::string> regex = number_range_regex(lo, lo_excl, hi, hi_excl);
    if (!regex) {
      empty_reason_ =
          fmt::format("no number satisfies the bounds at {}", display_pointer(conj[0].pointer));
      return Alts{};
    }
    return Alts{Seq::of_regex(std::move(*regex))};
  }
  // Integers: any bound, as the nearest integer inside it.
  std::optional<int64_t> lo, hi;
  for (const Bound& b : lower) {
    const double limit = static_cast<double>(kMaxNumberBound);
    if (!b.exact && !(std::fabs(b.value) <= limit))
      return refuse_bound(b, fmt::format("bounds beyond ±{} are not supported", kMaxNumberBound));
    int64_t v = b.exact ? *b.exact : static_cast<int64_t>(std::ceil(b.value));
    if (b.exclusive) v = b.exact ? v + 1 : static_cast<int64_t>(std::floor(b.value)) + 1;
    if (!lo || v > *lo) lo = v;
  }
  for (const Bound& b : upper) {
    const double limit = static_cast<double>(kMaxNumberBound);
    if (!b.exact && !(std::fabs(b.value) <= limit))
      return refuse_bound(b, fmt::format("bounds beyond ±{} are not supported", kMaxNumberBound));
    int64_t v = b.exact ? *b.exact : static_cast<int64_t>(std::floor(b.value));
    if (b.exclusive) v = b.exact ? v - 1 : static_cast<int64_t>(std::ceil(b.value)) - 1;
    if (!hi || v < *hi) hi = v;
  }
  if (lo && hi && *lo > *hi) {
    empty_reason_ =
        fmt::format("no integer satisfies the bounds at {}", display_pointer(conj[0].pointer));
    return Alts{};
  }
  if (!steps.empty()) {
    constexpr int64_t kMaxMultiples = 1024;
    const int64_t step = steps[0];
    if (!lo || !hi || (*hi - *lo) / step > kMaxMultiples) {
      return invalid_argument(
          "json_schema: keyword 'multipleOf' at {} needs minimum and maximum with at most {} "
          "multiples between them",
          display_pointer(multiples[0].second->pointer), kMaxMultiples);
    }
    std::vector<std::string> values;
    int64_t first = *lo % step == 0 ? *lo : *lo - (*lo % step) + (*lo > 0 ? step : 0);
    for (int64_t v = first; v <= *hi; v += step) {
      const bool all =
          std::all_of(steps.begin(), steps.end(), [v](int64_t s) { return v % s == 0; });
      if (all) values.push_back(regex_escape(std::to_string(v)));
    }
    if (values.empty()) {
      empty_reason_ = fmt::format("no multiple of {} lies within the bounds at {}", step,
                                  display_pointer(conj[0].pointer));
      return Alts{};
    }
    return Alts{Seq::of_regex(join_alternatives(values))};
  }
  if (!lo && !hi) return Alts{Seq::of_regex(std::string(kIntegerRegex))};
  return Alts{Seq::of_regex(integer_range_regex(lo, hi))};
}

}  // namespace pagoda::structured::json_schema_detail
