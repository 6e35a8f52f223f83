#include "unit/structured/matcher/test_grammars.h"

namespace pagoda::structured::testing {

Grammar json_value_grammar() {
  GrammarBuilder b;
  const int32_t value = b.add_rule("value");
  const Symbol ws = b.lexeme("[ \\t\\n\\r]*");
  const Symbol string = b.lexeme(R"("(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*")");
  const Symbol number = b.lexeme(R"(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)");
  const Symbol member =
      b.sequence("member", {ws, string, ws, b.literal(":"), ws, b.rule(value), ws});
  const Symbol members =
      b.sequence("members", {member, b.star("more_members", {b.literal(","), member})});
  const Symbol object = b.choice(
      "object", {{b.literal("{"), ws, b.literal("}")}, {b.literal("{"), members, b.literal("}")}});
  const Symbol element = b.sequence("element", {ws, b.rule(value), ws});
  const Symbol elements =
      b.sequence("elements", {element, b.star("more_elements", {b.literal(","), element})});
  const Symbol array = b.choice(
      "array", {{b.literal("["), ws, b.literal("]")}, {b.literal("["), elements, b.literal("]")}});
  for (const Symbol& s :
       {object, array, string, number, b.literal("true"), b.literal("false"), b.literal("null")})
    b.add_alternative(value, {s});
  const int32_t root = b.add_rule("root");
  b.add_alternative(root, {ws, b.rule(value), ws});
  return std::move(b).build(root).value();
}

}  // namespace pagoda::structured::testing
