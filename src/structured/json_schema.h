// JSON Schema → Grammar (grammar.h): the output is a JSON text valid under the schema, in the
// draft 2020-12 subset used in practice. Any other keyword, or a combination the grammar cannot
// enforce, is refused: invalid_argument whose message names the keyword and its JSON pointer
// ("json_schema: keyword 'patternProperties' at /properties/a is not supported"; the root is "/").
//
// Supported:
//  - type (a name or an array of names), nullable (OpenAPI: adds null to the node's type), enum,
//    const (values of any JSON type, written exactly: canonical strings, numbers as written, the
//    whitespace option between an object's or array's tokens, objects in their key order).
//  - objects: properties (written in schema order; required ones always, optional ones may be
//    left out: any in-order subset), required, additionalProperties false/true/schema (extra
//    keys come after the known ones, never one of the known names, written in canonical form,
//    i.e. without optional escapes). A required key that is not in properties comes after them,
//    its value per additionalProperties (any value when that is absent; refused as unsatisfiable
//    when it is false). Where a schema lists properties and says nothing about extra keys,
//    JsonSchemaOptions::default_additional_properties decides; with no properties listed, extra
//    keys are allowed (JSON Schema's default). minProperties/maxProperties only when the grammar
//    already guarantees them (minProperties <= number of required properties, maxProperties >= the
//    number of properties with no extra keys allowed).
//  - arrays: items, prefixItems (and the draft 4-7 items array + additionalItems), minItems,
//    maxItems (up to 10000), uniqueItems false (true only with maxItems <= 1).
//  - strings: minLength/maxLength (code points; a surrogate pair is one), pattern (ECMA-262
//    subset of regex.h, unanchored unless it starts with ^ / ends with $; characters that JSON
//    escapes match in their canonical escaped form; see json_schema_strings.h), format date-time,
//    date, time (RFC 3339, no leap seconds), uuid, email (a practical dot-atom@domain subset),
//    uri (RFC 3986, no IP literals), ipv4; any other format is an annotation. pattern or format
//    together with lengths only when every match already has an allowed length. Every accepted
//    string decodes to valid Unicode (no lone surrogate escapes).
//  - integers: minimum/maximum/exclusiveMinimum/exclusiveMaximum (also draft 4's boolean
//    exclusive*) as an exact digit-range regex (json_number_range.h), bounds within ±1e18;
//    multipleOf 1, or an integer step within a range of at most 1024 multiples.
//  - numbers: integer-valued bounds (e.g. minimum 0, exclusiveMaximum 10), enforced without
//    exponents; multipleOf 1 (makes it an integer).
//  - anyOf; oneOf whose branches provably exclude each other (json_schema_exclusive.h: different
//    types, distinct const/enum values, or a required property with distinct const/enum values),
//    compiled as their union (other oneOfs are refused, naming two branches); allOf merged (types
//    intersect, properties and required unite, bounds tighten, enums intersect; two different
//    patterns or formats are refused); keywords beside anyOf/oneOf apply to every branch.
//  - $ref to "#", "#/$defs/x", "#/definitions/x" or any JSON pointer in the document
//    (percent-decoded, ~0 ~1 escapes); a $ref alone compiles its target once as a rule (so
//    recursion works); a $ref with constraining siblings is merged with them. A recursion with
//    no finite instance ({"$ref":"#"}) is refused.
//  - `true` and {} accept any JSON value; `false` refuses (nothing matches), as a subschema it
//    removes what it applies to (a property, a branch, the items).
// Annotations are ignored: title, description, examples, default, $schema, $id, $comment,
// deprecated, readOnly, writeOnly, discriminator (OpenAPI), $defs/definitions (read through $ref).
// Refused: not, if/then/else, patternProperties, propertyNames, dependentRequired,
// dependentSchemas, dependencies, unevaluatedProperties/Items, contains/minContains/maxContains,
// $dynamicRef, $anchor, non-local $refs, and any unknown keyword.
//
// Canonical forms: integers are written without fraction or exponent (5, not 5.0), negative zero
// is not produced under bounds, keys come in schema order. These narrow the texts, never the
// accepted values' validity: every accepted text is valid under the schema.
//
// Limits (hostile input): schema text 1 MiB, nesting 128, 256 KiB of regex per enum, 10000
// anyOf/oneOf combinations when merged with siblings, grammar size within grammar.h's limits.
#pragma once

#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace pagoda::structured {

struct JsonSchemaOptions {
  // Whitespace the output may use between tokens: none (compact, `{"a":1}`) or flexible: one
  // space, or one newline (\n or \r\n) followed by up to max_whitespace spaces/tabs of indentation
  // (what json.dumps writes with or without indent, and what llama.cpp's JSON grammars allow).
  // Never longer runs: a weak model would spend its tokens on them.
  bool flexible_whitespace = true;
  int32_t max_whitespace = 16;  // indentation bytes after a newline when flexible
  // additionalProperties when the schema does not say: false forbids unknown keys (what strict
  // OpenAI structured outputs do), true allows any (the JSON Schema default).
  bool default_additional_properties = false;
};

// The regex of the whitespace allowed between JSON tokens ("" = none).
std::string json_whitespace_regex(const JsonSchemaOptions& options);

// `schema` is the schema as JSON text. The grammar's start rule derives exactly the JSON values
// the schema accepts (serialised with the options' whitespace), up to the refusals above.
Result<Grammar> compile_json_schema(std::string_view schema, const JsonSchemaOptions& options = {});

// Adds the schema's rules to `builder` and returns the symbol deriving a value (to embed a
// schema in a larger grammar: tool-call arguments).
Result<Symbol> add_json_schema(GrammarBuilder& builder, std::string_view schema,
                               const JsonSchemaOptions& options = {});

// Any JSON object (OpenAI's json_object mode): `{...}` with arbitrary nested values.
Grammar json_object_grammar(const JsonSchemaOptions& options = {});

}  // namespace pagoda::structured
