// JSON Schema → Grammar (grammar.h): the output is a JSON text valid under the schema, in the
// draft 2020-12 subset used in practice (type incl. arrays of types, properties, required,
// additionalProperties, items, prefixItems, minItems/maxItems, enum, const, anyOf, oneOf (as
// anyOf where the branches cannot overlap), allOf (merged), $ref/$defs/definitions (incl.
// recursion), nullable, string minLength/maxLength/pattern/format (date-time, date, time, uuid,
// email, uri, ipv4), integer/number minimum/maximum/exclusive* where a grammar can express them).
// Annotations that do not constrain (title, description, examples, default, $schema, $id,
// $comment, deprecated, readOnly, writeOnly) are ignored. Any other keyword, or a combination the
// grammar cannot enforce, is refused: invalid_argument whose message names the keyword and its
// JSON pointer ("json_schema: keyword 'patternProperties' at /properties/a is not supported").
#pragma once

#include <string_view>

#include "base/status.h"
#include "structured/grammar.h"

namespace pagoda::structured {

struct JsonSchemaOptions {
  // Whitespace the output may use between tokens: none (compact, `{"a":1}`) or flexible
  // (a bounded run of space/newline/tab, as models like to indent).
  bool flexible_whitespace = true;
  int32_t max_whitespace = 16;  // bytes per run when flexible
  // additionalProperties when the schema does not say: false forbids unknown keys (what strict
  // OpenAI structured outputs do), true allows any (the JSON Schema default).
  bool default_additional_properties = false;
};

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
