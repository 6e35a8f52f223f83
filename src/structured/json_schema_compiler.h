// The JSON Schema → Grammar compiler behind json_schema.h, shared by json_schema.cc (schema
// walk: allOf/anyOf/$ref, enums, scalars) and json_schema_containers.cc (objects, arrays).
//
// Core idea: a schema position is compiled as a conjunction of schema nodes (Conj): allOf
// appends its branches, a $ref with constraining siblings appends its target, and anyOf/oneOf
// distribute over their branches, so merging never copies JSON. Each type family then reads
// its keywords across the conjunction. A position that is exactly one $ref becomes a reference
// to a rule compiled once (recursion without inlining). Output pieces are Seqs whose adjacent
// regexes are merged, so keys, punctuation, whitespace and scalar values become few lexemes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "structured/grammar.h"
#include "structured/json_schema.h"

namespace pagoda::structured::json_schema_detail {

using Json = nlohmann::ordered_json;

inline constexpr size_t kMaxSchemaBytes = 1 << 20;
inline constexpr int kMaxSchemaDepth = 128;          // nesting of the schema document
inline constexpr int kMaxCompileDepth = 256;         // nesting of compile (incl. inlined $refs)
inline constexpr int64_t kMaxCompileCalls = 200000;  // anyOf distribution and $ref inlining
inline constexpr int64_t kMaxDistributedBranches = 10000;     // anyOf/oneOf × siblings
inline constexpr int kMaxRefHops = 32;                        // $refs inlined at one position
inline constexpr size_t kMaxConjunction = 64;                 // schemas merged at one position
inline constexpr int64_t kMaxRepetition = 10000;              // counted items / string chunks
inline constexpr int64_t kUnboundedCount = int64_t{1} << 31;  // a max at least this is no bound
inline constexpr size_t kMaxMergedRegexBytes = 4096;
inline constexpr size_t kMaxEnumRegexBytes = 256 * 1024;

// Parses schema text as JSON keeping object key order; refuses duplicate keys, nesting deeper
// than kMaxSchemaDepth and texts over `max_bytes`.
Result<Json> parse_ordered_json(std::string_view text, std::string_view what,
                                size_t max_bytes = kMaxSchemaBytes,
                                int max_depth = kMaxSchemaDepth);

// "/" for the root, else the pointer.
inline std::string display_pointer(const std::string& pointer) {
  return pointer.empty() ? "/" : pointer;
}
std::string escape_pointer_token(std::string_view token);

// One schema node of a conjunction, with the combinators already expanded.
struct Part {
  const Json* node = nullptr;
  std::string pointer;
  uint8_t consumed = 0;
};
inline constexpr uint8_t kConsumedAllOf = 1, kConsumedAnyOf = 2, kConsumedOneOf = 4,
                         kConsumedRef = 8;
using Conj = std::vector<Part>;

// A sequence of regexes (not yet lexemes) and grammar symbols.
struct Elem {
  bool is_regex = true;
  std::string regex;
  Symbol symbol;
};
struct Seq {
  std::vector<Elem> elems;

  Seq() = default;
  static Seq of_regex(std::string regex) {
    Seq s;
    s.add_regex(std::move(regex));
    return s;
  }
  static Seq of_symbol(Symbol symbol) {
    Seq s;
    s.add_symbol(symbol);
    return s;
  }
  void add_regex(std::string regex);
  void add_symbol(Symbol symbol) { elems.push_back(Elem{false, {}, symbol}); }
  void append(const Seq& other);
  bool is_single_regex() const { return elems.size() == 1 && elems[0].is_regex; }
};
using Alts = std::vector<Seq>;  // a union; empty: nothing matches

class Compiler {
 public:
  Compiler(const JsonSchemaOptions& options, const Json* root);

  // Compiles the whole schema into a grammar whose start rule derives its values.
  Result<Grammar> run() &&;
  // Only the any-object rules (json_object_grammar).
  Grammar any_object_grammar() &&;

  // --- shared by the type families ---
  Result<Alts> compile(Conj conj, int depth);
  Seq to_seq(Alts alts, std::string_view name);
  Symbol as_symbol(const Seq& seq, std::string_view name);
  std::vector<Symbol> to_symbols(const Seq& seq);
  Seq any_value();
  Seq any_object();
  Seq any_array();
  Status check_budget() const;
  Result<int64_t> read_count(const Part& part, std::string_view keyword) const;

  // Regexes of punctuation with the whitespace around it.
  std::string lbrace() const { return "\\{" + ws_; }
  std::string rbrace() const { return ws_ + "\\}"; }
  std::string empty_object() const { return "\\{" + ws_ + "\\}"; }
  std::string lbracket() const { return "\\[" + ws_; }
  std::string rbracket() const { return ws_ + "\\]"; }
  std::string empty_array() const { return "\\[" + ws_ + "\\]"; }
  std::string comma() const { return ws_ + "," + ws_; }
  std::string colon() const { return ws_ + ":" + ws_; }
  std::string key(std::string_view name) const;

  GrammarBuilder& builder() { return b_; }
  const JsonSchemaOptions& options() const { return options_; }
  void set_empty_reason(std::string reason) { empty_reason_ = std::move(reason); }

  // json_schema_containers.cc
  Result<Alts> object_alts(const Conj& conj, int depth);
  Result<Alts> array_alts(const Conj& conj, int depth);

 private:
  Result<Alts> leaf_alts(const Conj& conj, int depth);
  Result<Alts> enum_alts(const Conj& conj, uint8_t types);
  Result<Alts> string_alts(const Conj& conj);
  Result<Alts> number_alts(const Conj& conj, uint8_t types);
  Result<std::pair<const Json*, std::string>> resolve_ref(const Part& part);
  Symbol ref_rule(const Json* target, const std::string& pointer);
  Status value_regex(const Json& value, std::string& out, int depth) const;

  const JsonSchemaOptions& options_;
  const Json* root_;
  GrammarBuilder b_;
  std::string ws_;
  int64_t num_calls_ = 0;
  int64_t num_distributed_ = 0;
  size_t lexeme_bytes_ = 0;
  std::string empty_reason_;
  struct PendingRef {
    const Json* target;
    std::string pointer;
    int32_t rule;
  };
  std::unordered_map<const Json*, int32_t> ref_rules_;
  std::vector<PendingRef> pending_refs_;
  std::unordered_map<const Json*, std::unordered_map<std::string_view, const Json*>> key_index_;
  std::optional<int32_t> any_value_, any_object_, any_array_;
  std::unordered_set<const Json*> checked_one_ofs_;  // oneOf arrays found exclusive
};

// Keyword kinds; any keyword not in the table is refused.
enum class Kw : uint8_t {
  kAnnotation,  // ignored (incl. $defs/definitions, read only through $ref)
  kNullable,
  kType,
  kEnum,
  kConst,
  kAllOf,
  kAnyOf,
  kOneOf,
  kRef,
  kObject,
  kArray,
  kString,
  kNumber,
};
std::optional<Kw> keyword_kind(std::string_view keyword);

// Type bits: "number" is kInteger | kFraction, "integer" kInteger.
inline constexpr uint8_t kNull = 1, kBool = 2, kObject = 4, kArray = 8, kString = 16, kInteger = 32,
                         kFraction = 64, kAllTypes = 127;

// The type bits of a JSON Schema type name ("number": kInteger | kFraction); nullopt if unknown.
std::optional<uint8_t> type_name_bit(std::string_view name);
// The type bit of a JSON value (an integral float is an integer, as JSON Schema has it).
uint8_t value_type_bit(const Json& v);
// JSON equality as JSON Schema defines it: objects regardless of key order, numbers by value.
bool json_equal(const Json& a, const Json& b);

inline constexpr std::string_view kIntegerRegex = "\\-?(?:0|[1-9][0-9]*)";
inline constexpr std::string_view kNumberRegex =
    "\\-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+\\-]?[0-9]+)?";

// (?:a|b|...), or the one alternative alone.
std::string join_alternatives(const std::vector<std::string>& alternatives);
// At most 64 bytes of s, for messages.
std::string shorten(std::string_view s);

// Finds `key` in `object` (an object node) or nullptr.
const Json* find_key(const Json& object, std::string_view key);

}  // namespace pagoda::structured::json_schema_detail
