// compile_json_schema: for schemas using every supported keyword, valid instances (compact and
// pretty-printed) are in the grammar's language and invalid ones are not; refusals name the
// keyword and its pointer; hostile schemas fail cleanly.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "structured/json_schema.h"
#include "structured/recognizer.h"

namespace pagoda::structured {
namespace {

using OrderedJson = nlohmann::ordered_json;

bool accepts(const Grammar& g, std::string_view text) {
  Result<bool> r = grammar_accepts(g, text);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() && *r;
}

struct Case {
  std::string schema;
  std::vector<std::string> valid;    // JSON: checked compact and pretty
  std::vector<std::string> invalid;  // texts, checked as written
  JsonSchemaOptions options = {};
};

void check(const Case& c) {
  SCOPED_TRACE(c.schema);
  Result<Grammar> g = compile_json_schema(c.schema, c.options);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  for (const std::string& v : c.valid) {
    const OrderedJson parsed = OrderedJson::parse(v);
    const std::string compact = parsed.dump();
    EXPECT_TRUE(accepts(*g, compact)) << "valid (compact): " << compact;
    if (c.options.flexible_whitespace) {
      const std::string pretty = parsed.dump(2);
      EXPECT_TRUE(accepts(*g, pretty)) << "valid (pretty): " << pretty;
    }
  }
  for (const std::string& v : c.invalid)
    EXPECT_FALSE(accepts(*g, v)) << "invalid: " << v;
}

JsonSchemaOptions compact_options() {
  JsonSchemaOptions o;
  o.flexible_whitespace = false;
  return o;
}

JsonSchemaOptions open_options() {
  JsonSchemaOptions o;
  o.default_additional_properties = true;
  return o;
}

TEST(JsonSchema, ObjectsRequiredOptionalInSchemaOrder) {
  check(
      {R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"},
             "c":{"type":"boolean"}},"required":["b"]})",
       {R"({"b":1})", R"({"a":"x","b":1})", R"({"b":1,"c":true})", R"({"a":"","b":-2,"c":false})"},
       {R"({})", R"({"a":"x"})", R"({"b":1,"a":"x"})", R"({"b":1,"d":2})", R"({"b":1,})",
        R"({"b":"1"})", R"( {"b":1})", R"({"b":1} )", R"({"b":1,"b":1})"}});
}

TEST(JsonSchema, AllOptionalObjectAllowsEverySubsetInOrder) {
  check({R"({"type":"object","properties":{"p":{"type":"integer"},"q":{"type":"integer"},
             "r":{"type":"integer"}}})",
         {R"({})", R"({"p":1})", R"({"q":1})", R"({"r":1})", R"({"p":1,"r":3})", R"({"q":2,"r":3})",
          R"({"p":1,"q":2,"r":3})"},
         {R"({"r":1,"p":1})", R"({"p":1,"p":1})", R"({,"p":1})", R"({"p":1,})"}});
}

TEST(JsonSchema, InterleavedRequiredAndOptional) {
  check({R"({"type":"object","properties":{"o1":{"type":"integer"},"r1":{"type":"integer"},
             "o2":{"type":"integer"},"r2":{"type":"integer"},"o3":{"type":"integer"}},
             "required":["r1","r2"]})",
         {R"({"r1":1,"r2":2})", R"({"o1":0,"r1":1,"r2":2})", R"({"r1":1,"o2":0,"r2":2,"o3":3})",
          R"({"o1":0,"r1":1,"o2":0,"r2":2,"o3":3})"},
         {R"({"r1":1})", R"({"o1":0,"r2":2})", R"({"r1":1,"r2":2,"o1":0})"}});
}

TEST(JsonSchema, FlexibleWhitespaceIsBounded) {
  const std::string schema = R"({"type":"object","properties":{"a":{"type":"array",
      "items":{"type":"integer"}}},"required":["a"]})";
  Result<Grammar> g = compile_json_schema(schema);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  // One space, or one newline and up to 16 bytes of indentation, between tokens.
  EXPECT_TRUE(accepts(*g, "{ \"a\" : [ 1 ,\n2 ] }"));
  EXPECT_TRUE(accepts(*g, "{\r\n  \"a\": []\n}"));
  EXPECT_TRUE(accepts(*g, "{\n\t\"a\": [\n    1,\n    2\n  ]\n}"));
  EXPECT_TRUE(accepts(*g, "{\n" + std::string(16, ' ') + "\"a\":[]}"));
  EXPECT_FALSE(accepts(*g, "{\n" + std::string(17, ' ') + "\"a\":[]}"));
  EXPECT_FALSE(accepts(*g, "{  \"a\":[]}"));    // two spaces
  EXPECT_FALSE(accepts(*g, "{\n\n\"a\":[]}"));  // two newlines
  EXPECT_FALSE(accepts(*g, "{\t\"a\":[]}"));    // indentation without a newline
  EXPECT_FALSE(accepts(*g, "{\f\"a\":[]}"));    // not JSON whitespace
  Result<Grammar> compact = compile_json_schema(schema, compact_options());
  ASSERT_TRUE(compact.ok());
  EXPECT_TRUE(accepts(*compact, R"({"a":[1,2]})"));
  EXPECT_FALSE(accepts(*compact, R"({"a": [1,2]})"));
}

TEST(JsonSchema, AdditionalProperties) {
  // Default option: unknown keys forbidden where properties are listed.
  check({R"({"type":"object","properties":{"a":{"type":"integer"}}})",
         {R"({})", R"({"a":1})"},
         {R"({"b":1})", R"({"a":1,"b":1})"}});
  // ... and allowed when the option says so, or the schema does: after the known keys, any key
  // but the known names.
  check({R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{}},
             "additionalProperties":true})",
         {R"({"x":[1]})", R"({"a":1,"b":"s","c":null})", R"({"a":1,"ab":2,"abc":3,"":4})",
          R"({"b":1,"q\"uote":2})"},
         {R"({"b":1,"a":1})", R"({"a":1,"a":2})", R"({"b":1,"ab":2})"}});
  check({R"({"type":"object","properties":{"a":{"type":"integer"}}})",
         {R"({"a":1,"b":"x"})", R"({"zz":{}})"},
         {R"({"a":"x"})", R"({"b":1,"a":1})"},
         open_options()});
  check({R"({"type":"object","properties":{"id":{"type":"integer"}},
             "additionalProperties":{"type":"string","maxLength":2}})",
         {R"({"id":1,"x":"ab","y":""})", R"({"k":"v"})"},
         {R"({"id":1,"x":"abc"})", R"({"x":1})", R"({"id":"1"})"}});
  check({R"({"type":"object","additionalProperties":false})", {R"({})"}, {R"({"a":1})"}});
  // No properties listed: any object, whatever the option.
  check({R"({"type":"object"})", {R"({})", R"({"a":{"b":[1,null,"x"]}})"}, {R"([])", R"("s")"}});
}

TEST(JsonSchema, RequiredKeysNotInPropertiesAreAllowedWithAnyValue) {
  check({R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a","b"]})",
         {R"({"a":1,"b":[true]})", R"({"a":1,"b":"x"})"},
         {R"({"a":1})", R"({"b":1,"a":1})"}});
  check({R"({"type":"object","required":["b"],"additionalProperties":{"type":"integer"}})",
         {R"({"b":1})", R"({"b":1,"c":2})"},
         {R"({"b":"x"})", R"({})"}});
}

TEST(JsonSchema, PropertyNamesNeedingEscapes) {
  check({R"({"type":"object","properties":{"q\"t":{"type":"integer"},"b\\s":{"type":"integer"},
             "n\nl":{"type":"integer"},"ü😀":{"type":"integer"}},"additionalProperties":true})",
         {R"({"q\"t":1,"b\\s":2,"n\nl":3,"ü😀":4})", R"({"ü😀":4,"ü":5})", R"({"x":1})"},
         {R"({"q\"t":"1"})", R"({"x":1,"ü😀":2})"}});
}

TEST(JsonSchema, LongPropertyNamesStillExcludedFromExtraKeys) {
  const std::string name(128, 'k');
  Result<Grammar> g = compile_json_schema(R"({"type":"object","properties":{")" + name +
                                          R"(":{"type":"integer"}},"additionalProperties":true})");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(accepts(*g, R"({")" + name + R"(":1})"));
  EXPECT_TRUE(accepts(*g, R"({")" + name + R"(k":"x"})"));
  EXPECT_TRUE(accepts(*g, R"({")" + name.substr(1) + R"(":"x"})"));
  EXPECT_FALSE(accepts(*g, R"({")" + name + R"(":"x"})"));
  // Longer names: extra keys are any string (documented fallback), the grammar still compiles.
  const std::string longer(1000, 'k');
  Result<Grammar> any_key =
      compile_json_schema(R"({"type":"object","properties":{")" + longer +
                          R"(":{"type":"integer"}},"additionalProperties":true})");
  ASSERT_TRUE(any_key.ok()) << any_key.status().to_string();
  EXPECT_TRUE(accepts(*any_key, R"({")" + longer + R"(":1})"));
  EXPECT_TRUE(accepts(*any_key, R"({"x":"y"})"));
}

TEST(JsonSchema, Arrays) {
  check({R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
         {"[1]", "[1,2,3]"},
         {"[]", "[1,2,3,4]", "[1,]", "[\"1\"]"}});
  check({R"({"type":"array","items":{"type":"string"}})", {"[]", R"(["a","b"])"}, {"[1]"}});
  check({R"({"type":"array","minItems":2})", {R"([1,"x"])", R"([{},[],null])"}, {"[1]", "[]"}});
  check({R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}]})",
         {"[]", R"(["a"])", R"(["a",1])", R"(["a",1,{"x":null}])"},
         {"[1]", R"(["a","b"])"}});
  check({R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false,
             "minItems":1})",
         {R"(["a"])", R"(["a",1])"},
         {"[]", R"(["a",1,2])"}});
  check({R"({"type":"array","prefixItems":[{"const":0}],"items":{"type":"boolean"},
             "minItems":3,"maxItems":4})",
         {"[0,true,false]", "[0,true,false,true]"},
         {"[0,true]", "[0,true,false,true,true]", "[1,true,false]"}});
  // Draft 4-7 tuple form.
  check({R"({"type":"array","items":[{"type":"integer"}],"additionalItems":false})",
         {"[]", "[1]"},
         {"[1,2]", "[\"a\"]"}});
  check({R"({"type":"array","items":{"type":"array","items":{"type":"integer"},"maxItems":2}})",
         {"[]", "[[],[1],[1,2]]"},
         {"[[1,2,3]]", "[1]"}});
  check({R"({"type":"array","uniqueItems":false,"maxItems":0})", {"[]"}, {"[1]"}});
  check({R"({"type":"array","uniqueItems":true,"maxItems":1})", {"[]", "[1]"}, {"[1,1]"}});
}

TEST(JsonSchema, Strings) {
  check(
      {R"({"type":"string"})",
       {R"("")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\u20AC")", R"("😀 é")", R"("\ud83d\ude00")"},
       {"\"a", "\"\n\"", R"("\x")", R"("\u12")", "'a'", R"("\ud83d")", R"("\ude00\ud83d")",
        "\"\xff\""}});
  check({R"({"type":"string","minLength":2,"maxLength":3})",
         {R"("ab")", R"("abc")", R"("😀😀")", R"("\n\u0041")", R"("\ud83d\ude00x")"},
         {R"("a")", R"("abcd")", R"("😀")", R"("\ud83d\ude00")"}});
  check({R"({"type":"string","maxLength":0})", {R"("")"}, {R"("a")"}});
  check({R"({"type":"string","minLength":1})", {R"("a")", R"("abcdefghijk")"}, {R"("")"}});
}

TEST(JsonSchema, LongStringLengthsUseChunks) {
  Result<Grammar> g = compile_json_schema(R"({"type":"string","minLength":300,"maxLength":1000})");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  for (int n : {299, 300, 301, 319, 320, 383, 384, 999, 1000, 1001}) {
    const std::string text = "\"" + std::string(static_cast<size_t>(n), 'x') + "\"";
    EXPECT_EQ(accepts(*g, text), n >= 300 && n <= 1000) << n;
  }
  Result<Grammar> open = compile_json_schema(R"({"type":"string","minLength":700})");
  ASSERT_TRUE(open.ok()) << open.status().to_string();
  for (int n : {0, 699, 700, 701, 1500}) {
    const std::string text = "\"" + std::string(static_cast<size_t>(n), 'y') + "\"";
    EXPECT_EQ(accepts(*open, text), n >= 700) << n;
  }
}

TEST(JsonSchema, Patterns) {
  check({R"({"type":"string","pattern":"^[a-z]+\\d{2}$"})",
         {R"("ab12")", R"("z00")"},
         {R"("ab1")", R"("Ab12")", R"("ab12x")", R"("xab12 ")"}});
  // Unanchored: the content must contain a match.
  check({R"({"type":"string","pattern":"fo+"})",
         {R"("fo")", R"("xxfoooy")", R"("a\"fo\n")"},
         {R"("f")", R"("")", R"("oof")"}});
  check({R"({"type":"string","pattern":"^ab"})", {R"("ab")", R"("abc")"}, {R"("cab")"}});
  check({R"({"type":"string","pattern":"ab$"})", {R"("ab")", R"("cab")"}, {R"("abc")"}});
  // Characters JSON must escape match in their escaped form; a negated class cannot produce a
  // raw quote.
  check({R"({"type":"string","pattern":"^[^a]+$"})",
         {R"("\"")", R"("\\")", R"("\n")", R"("bc")"},
         {R"("a")", R"("ba")"}});
  check({R"({"type":"string","pattern":"^a\"b\\\\c\\n$"})", {R"("a\"b\\c\n")"}, {R"("a\"b\\cn")"}});
  check({R"({"type":"string","pattern":"^x$|^z"})",
         {R"("x")", R"("z")", R"("zz")"},
         {R"("y")", R"("xx")"}});
  check({R"({"type":"string","pattern":"^.{2}$"})",
         {R"("ab")", R"("\"\\")", R"("😀é")"},
         {R"("a")", R"("\n\n")"}});
  check({R"({"type":"string","pattern":"^\\w+@\\S+$"})",
         {R"("a_1@x.y")"},
         {R"("a-b@x")", R"("a@x y")"}});
  // Lengths implied by the pattern are fine.
  check({R"({"type":"string","pattern":"^[0-9]{5}$","minLength":5,"maxLength":5})",
         {R"("12345")"},
         {R"("1234")"}});
}

TEST(JsonSchema, Formats) {
  check({R"({"type":"string","format":"date"})",
         {R"("2024-02-29")", R"("1999-12-31")", R"("2000-02-29")"},
         {R"("2023-02-29")", R"("1900-02-29")", R"("2024-04-31")", R"("2024-1-01")",
          R"("0000-01-01")", R"("2024-13-01")"}});
  check({R"({"type":"string","format":"time"})",
         {R"("00:00:00Z")", R"("23:59:59.999+14:00")", R"("12:30:00-05:00")"},
         {R"("24:00:00Z")", R"("12:00:00")", R"("12:60:00Z")", R"("1:00:00Z")"}});
  check({R"({"type":"string","format":"date-time"})",
         {R"("2024-02-29T23:59:59Z")", R"("2024-01-01T00:00:00.5+01:00")",
          R"("2024-01-01t00:00:00z")"},
         {R"("2024-02-30T00:00:00Z")", R"("2024-01-01T00:00:00")", R"("2024-01-01")",
          R"("2024-01-01 00:00:00Z")"}});
  check({R"({"type":"string","format":"uuid"})",
         {R"("123e4567-e89b-12d3-a456-426614174000")", R"("123E4567-E89B-12D3-A456-426614174000")"},
         {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400")"}});
  check({R"({"type":"string","format":"ipv4"})",
         {R"("0.0.0.0")", R"("192.168.1.254")", R"("255.255.255.255")"},
         {R"("256.0.0.1")", R"("1.2.3")", R"("01.2.3.4")", R"("1.2.3.4.5")"}});
  check({R"({"type":"string","format":"email"})",
         {R"("a@b.co")", R"("first.last+tag@sub.example.org")"},
         {R"("a@b")", R"("@b.co")", R"("a b@c.de")", R"("a@@b.co")"}});
  check({R"({"type":"string","format":"uri"})",
         {R"("https://example.com/a?b=c#d")", R"("mailto:x@y.z")", R"("urn:a:b")",
          R"("http://u:p@h:80/%20")"},
         {R"("example.com")", R"("http://a b")", R"("http://a#b#c")", R"("")"}});
  check({R"({"type":"string","format":"hostname"})",
         {R"("localhost")", R"("a-b.example.com")", R"("x1")"},
         {R"("localhost:8080")", R"("_bad")", R"("-a.com")", R"("a-.com")", R"("a..b")", R"("")"}});
  // A custom format is an annotation; a standard one we do not enforce is refused.
  check({R"({"type":"string","format":"only-a"})", {R"("anything at all")"}, {"1"}});
  Result<Grammar> ipv6 = compile_json_schema(R"({"type":"string","format":"ipv6"})");
  ASSERT_FALSE(ipv6.ok());
  EXPECT_NE(ipv6.status().message().find("format 'ipv6'"), std::string::npos);
}

TEST(JsonSchema, IntegersWithRanges) {
  check({R"({"type":"integer","minimum":-12,"maximum":250})",
         {"-12", "-10", "-1", "0", "9", "10", "99", "100", "199", "249", "250"},
         {"-13", "-100", "251", "300", "1000", "-0", "01", "1.0", "1e2"}});
  check({R"({"type":"integer","exclusiveMinimum":-1,"exclusiveMaximum":10})",
         {"0", "9"},
         {"-1", "10"}});
  check({R"({"type":"integer","minimum":1.5,"maximum":3.7})", {"2", "3"}, {"1", "4"}});
  check({R"({"type":"integer","minimum":1000})",
         {"1000", "1001", "99999999999999"},
         {"999", "0", "-1000"}});
  check({R"({"type":"integer","maximum":-1000})",
         {"-1000", "-1001", "-99999999999"},
         {"-999", "0", "1000"}});
  // Draft 4 boolean exclusiveMinimum.
  check({R"({"type":"integer","minimum":5,"exclusiveMinimum":true})", {"6"}, {"5"}});
  check({R"({"type":"integer","multipleOf":3,"minimum":-6,"maximum":7})",
         {"-6", "-3", "0", "3", "6"},
         {"-5", "1", "7", "9"}});
  check({R"({"type":"integer","multipleOf":1})", {"5", "-5"}, {"5.5"}});
}

TEST(JsonSchema, NumbersWithIntegerBounds) {
  check({R"({"type":"number"})",
         {"0", "-0", "1.5", "-2e10", "3E-2", "1e+5", "123456789.123456789"},
         {"01", "1.", ".5", "+1", "1e", "NaN", "Infinity", "--1"}});
  check({R"({"type":"number","minimum":0})", {"0", "0.0", "1.5", "100"}, {"-1", "-0.5"}});
  check({R"({"type":"number","exclusiveMinimum":0})", {"0.001", "1", "7.5"}, {"0", "0.0", "-0.5"}});
  check({R"({"type":"number","minimum":-2,"maximum":3})",
         {"-2", "-2.0", "-1.99", "-0.5", "0", "2.999", "3", "3.00"},
         {"-2.01", "-3", "3.01", "4", "1e0"}});
  check({R"({"type":"number","exclusiveMinimum":-2,"exclusiveMaximum":3})",
         {"-1.99", "2.5", "0"},
         {"-2", "-2.0", "3", "3.0"}});
  check({R"({"type":"number","multipleOf":1,"maximum":3})", {"3", "-7"}, {"2.5", "4"}});
}

TEST(JsonSchema, EnumConstAndTypes) {
  check({R"({"enum":["a",1,null,true,2.5,{"k":[1,"x"]},[]]})",
         {R"("a")", "1", "null", "true", "2.5", R"({"k":[1,"x"]})", "[]"},
         {R"("b")", "2", "false", R"({"k":[1]})", R"({"k":[1,"x"],"l":1})", "[1]"}});
  check({R"({"const":{"a":[1,2]}})", {R"({"a":[1,2]})"}, {R"({"a":[2,1]})"}});
  check({R"({"type":"string","enum":["x",1,"y"]})", {R"("x")", R"("y")"}, {"1"}});
  check({R"({"enum":["q\"uote","back\\","tab\t","😀"]})",
         {R"("q\"uote")", R"("back\\")", R"("tab\t")", R"("😀")"},
         {R"("quote")", R"("tab	")"}});
  check({R"({"type":["string","null"]})", {R"("s")", "null"}, {"1", "[]"}});
  check({R"({"type":"integer","nullable":true})", {"1", "null"}, {R"("1")"}});
  check({R"({"type":"boolean"})", {"true", "false"}, {"null", "0", R"("true")"}});
  check({R"({"type":"null"})", {"null"}, {"0"}});
  check({R"({"type":["integer","number"]})", {"1", "1.5"}, {R"("1")"}});
}

TEST(JsonSchema, EmptyAndTrueSchemasAcceptAnyValue) {
  for (const char* schema : {"{}", "true", R"({"description":"anything","title":"x"})"}) {
    check({schema,
           {"null", "true", "0", "-1.5e3", R"("s")", "[]", R"([1,[2,[3]]])", "{}",
            R"({"a":{"b":[null,{"c":"d"}]}})"},
           {"", "nul", "[1,]", "{\"a\"}", "'s'", "[1] [2]"}});
  }
}

TEST(JsonSchema, AnyOfOneOfAllOf) {
  check({R"({"anyOf":[{"type":"string"},{"type":"integer","minimum":0}]})",
         {R"("x")", "0", "7"},
         {"-1", "null", "1.5"}});
  check({R"({"oneOf":[{"type":"object","properties":{"t":{"const":"a"},"x":{"type":"integer"}},
             "required":["t","x"]},{"type":"object","properties":{"t":{"const":"b"},
             "y":{"type":"string"}},"required":["t","y"]}]})",
         {R"({"t":"a","x":1})", R"({"t":"b","y":"s"})"},
         {R"({"t":"a","y":"s"})", R"({"t":"c","x":1})"}});
  // Siblings of anyOf apply to every branch.
  check({R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
             "anyOf":[{"required":["a"]},{"required":["b"]}]})",
         {R"({"a":1})", R"({"b":1})", R"({"a":1,"b":2})"},
         {R"({})"}});
  // allOf merges objects: properties and required are unions, constraints intersect.
  check({R"({"allOf":[{"type":"object","properties":{"a":{"type":"integer","minimum":0}},
             "required":["a"]},{"properties":{"a":{"maximum":5},"b":{"type":"string"}}}]})",
         {R"({"a":0})", R"({"a":5,"b":"x"})"},
         {R"({"a":6})", R"({"b":"x"})", R"({"a":-1})"}});
  check({R"({"allOf":[{"type":["string","integer"]},{"type":["integer","null"]}]})",
         {"1"},
         {R"("s")", "null"}});
  check({R"({"allOf":[{"type":"string","minLength":2},{"maxLength":3}]})",
         {R"("ab")", R"("abc")"},
         {R"("a")", R"("abcd")"}});
  check({R"({"allOf":[{"enum":["a","b","c"]},{"enum":["b","c","d"]}]})",
         {R"("b")", R"("c")"},
         {R"("a")", R"("d")"}});
  check({R"({"anyOf":[{"type":"string"},false]})", {R"("s")"}, {"1"}});
}

TEST(JsonSchema, RefsAndRecursion) {
  check({R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
             "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},
             "$ref":"#/$defs/node"})",
         {R"({"v":1})", R"({"v":1,"kids":[]})",
          R"({"v":1,"kids":[{"v":2,"kids":[{"v":3}]},{"v":4}]})"},
         {R"({"v":1,"kids":[{}]})", R"({"kids":[]})"}});
  check({R"({"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#"},
             {"type":"null"}]}},"required":["v","next"]})",
         {R"({"v":1,"next":null})", R"({"v":1,"next":{"v":2,"next":{"v":3,"next":null}}})"},
         {R"({"v":1})", R"({"v":1,"next":{"v":2}})"}});
  check({R"({"definitions":{"a/b":{"type":"integer"},"c~d":{"type":"string"},"e f":{"type":"null"}},
             "type":"array","prefixItems":[{"$ref":"#/definitions/a~1b"},
             {"$ref":"#/definitions/c~0d"},{"$ref":"#/definitions/e%20f"}]})",
         {R"([1,"s",null])"},
         {R"(["s"])", R"([1,2])"}});
  // A $ref with constraining siblings is merged with them.
  check({R"({"$defs":{"n":{"type":"integer"}},"$ref":"#/$defs/n","minimum":3})", {"3"}, {"2"}});
  // Mutual recursion and refs to refs.
  check({R"({"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/b"}},"b":{"anyOf":[
             {"type":"integer"},{"$ref":"#/$defs/a"}]},"c":{"$ref":"#/$defs/b"}},
             "$ref":"#/$defs/c"})",
         {"1", "[]", "[1,[2,[]],3]"},
         {R"(["x"])", "[1,[\"x\"]]"}});
  // A ref into properties (not only $defs).
  check({R"({"type":"object","properties":{"a":{"type":"string"},"b":{"$ref":"#/properties/a"}}})",
         {R"({"a":"x","b":"y"})"},
         {R"({"b":1})"}});
}

TEST(JsonSchema, AddJsonSchemaEmbeds) {
  GrammarBuilder b;
  Result<Symbol> value = add_json_schema(b, R"({"type":"integer","minimum":0,"maximum":9})");
  ASSERT_TRUE(value.ok()) << value.status().to_string();
  const int32_t start = b.add_rule("start");
  b.add_alternative(start, {b.literal("n="), *value});
  Result<Grammar> g = std::move(b).build(start);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(accepts(*g, "n=7"));
  EXPECT_FALSE(accepts(*g, "n=10"));
  EXPECT_FALSE(accepts(*g, "7"));
  GrammarBuilder bad;
  EXPECT_FALSE(add_json_schema(bad, R"({"not":{}})").ok());
}

TEST(JsonSchema, JsonObjectGrammar) {
  const Grammar g = json_object_grammar();
  for (const char* ok :
       {"{}", R"({"a":1})", R"({"a":[1,{"b":null}],"c":"d","e":{"f":{}}})", "{ \"a\" : [ ] }"}) {
    EXPECT_TRUE(accepts(g, ok)) << ok;
  }
  for (const char* bad : {"[]", "1", R"("s")", R"({"a":})", R"({"a":1,})", "{a:1}", ""})
    EXPECT_FALSE(accepts(g, bad)) << bad;
  JsonSchemaOptions compact;
  compact.flexible_whitespace = false;
  const Grammar c = json_object_grammar(compact);
  EXPECT_TRUE(accepts(c, R"({"a":[1]})"));
  EXPECT_FALSE(accepts(c, R"({"a": [1]})"));
}

// --- refusals and hostile input ---

// Keywords no draft defines as validation ("id" of draft 4, extensions) are annotations: the
// schema means the same without them (as for python-jsonschema).
TEST(JsonSchemaAnnotations, UnknownKeywordsAreIgnored) {
  Result<Grammar> g = compile_json_schema(
      R"({"id":"s","x-custom":1,"type":"object","properties":{"a":{"type":"integer","_format":"x"}},)"
      R"("required":["a"],"additionalProperties":false})");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(accepts(*g, R"({"a":1})"));
  EXPECT_FALSE(accepts(*g, R"({"a":"1"})"));
  EXPECT_FALSE(accepts(*g, R"({})"));
}

void expect_refused(const std::string& schema, const std::string& needle) {
  Result<Grammar> g = compile_json_schema(schema);
  ASSERT_FALSE(g.ok()) << schema << " compiled:\n" << (g.ok() ? g->to_string() : "");
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << g.status().to_string();
  EXPECT_NE(g.status().message().find(needle), std::string::npos)
      << "message: " << g.status().message() << "\nexpected to contain: " << needle;
}

// oneOf is exact when its branches exclude each other (then it compiles as their union), and
// refused, naming two branches, when a value might match both.
TEST(JsonSchema, OneOfWithExclusiveBranches) {
  // Different types (integer and number overlap; integer and string do not).
  check({R"({"oneOf":[{"type":"string"},{"type":"integer"},{"type":"null"}]})",
         {R"("x")", "3", "null"},
         {"1.5", "true"}});
  // Distinct const/enum values, also through $ref.
  check({R"({"$defs":{"a":{"enum":["x","y"]}},"oneOf":[{"$ref":"#/$defs/a"},{"const":"z"}]})",
         {R"("x")", R"("z")"},
         {R"("w")"}});
  // Closed objects: each requires a key the other does not allow.
  check({R"({"oneOf":[{"type":"object","properties":{"src":{"type":"string"}},
             "required":["src"],"additionalProperties":false},
            {"type":"object","properties":{"with":{"type":"string"}},"required":["with"],
             "additionalProperties":false}]})",
         {R"({"src":"a"})", R"({"with":"b"})"},
         {R"({"src":"a","with":"b"})", R"({})"}});
  // A discriminator reached through allOf and $ref; nested anyOf types.
  check({R"({"$defs":{"tag":{"type":"object","properties":{"kind":{"const":"a"}},
             "required":["kind"]}},
            "oneOf":[{"allOf":[{"$ref":"#/$defs/tag"}]},
                     {"type":"object","properties":{"kind":{"enum":["b","c"]}},
                      "required":["kind"]},
                     {"anyOf":[{"type":"string"},{"type":"boolean"}]}]})",
         {R"({"kind":"a"})", R"({"kind":"c"})", R"("s")", "false"},
         {R"({"kind":"d"})", R"({})", "1"}});
}

TEST(JsonSchema, OneOfWhoseBranchesMayOverlapIsRefused) {
  expect_refused(R"({"oneOf":[{"type":"integer"},{"type":"number"}]})",
                 "keyword 'oneOf' at /: branches 0 and 1 may both match");
  expect_refused(R"({"oneOf":[{"type":"string","pattern":"^a"},{"type":"string"}]})",
                 "branches 0 and 1");
  // Required keys alone do not exclude: {"a":1,"b":2} has both.
  expect_refused(R"({"type":"object","properties":{"a":{},"b":{}},
                    "oneOf":[{"required":["a"]},{"required":["b"]}]})",
                 "keyword 'oneOf' at /");
  // A discriminator that is not required: {} matches both.
  expect_refused(R"({"properties":{"x":{"type":"array","items":{"oneOf":[
                      {"type":"object","properties":{"t":{"const":"a"}}},
                      {"type":"object","properties":{"t":{"const":"b"}}}]}}}})",
                 "keyword 'oneOf' at /properties/x/items: branches 0 and 1");
  expect_refused(R"({"oneOf":[{"type":"string"},{"enum":["x",1]},{"type":"integer"}]})",
                 "branches 0 and 1");
}

TEST(JsonSchemaRefusals, NameTheKeywordAndPointer) {
  expect_refused(R"({"not":{"type":"string"}})", "keyword 'not' at /");
  expect_refused(R"({"type":"object","properties":{"a":{"patternProperties":{"x":{}}}}})",
                 "keyword 'patternProperties' at /properties/a");
  expect_refused(R"({"if":{},"then":{}})", "keyword 'if' at /");
  expect_refused(R"({"type":"object","propertyNames":{"maxLength":3}})", "'propertyNames'");
  expect_refused(R"({"type":"object","dependentRequired":{"a":["b"]}})", "'dependentRequired'");
  expect_refused(R"({"type":"object","dependentSchemas":{}})", "'dependentSchemas'");
  expect_refused(R"({"type":"object","unevaluatedProperties":false})", "'unevaluatedProperties'");
  expect_refused(R"({"type":"array","contains":{"type":"integer"}})", "keyword 'contains'");
  expect_refused(R"({"items":{"$anchor":"x"}})", "keyword '$anchor' at /items");
  expect_refused(R"({"$defs":{"a":{"maxContains":1}},"$ref":"#/$defs/a"})",
                 "keyword 'maxContains' at /$defs/a");
  expect_refused(R"({"type":"array","uniqueItems":true})", "keyword 'uniqueItems' at /");
  expect_refused(R"({"type":"object","properties":{"a":{}},"minProperties":1})",
                 "keyword 'minProperties' at /");
  expect_refused(R"({"type":"object","properties":{"a":{},"b":{}},"maxProperties":1})",
                 "keyword 'maxProperties' at /");
  expect_refused(R"({"type":"number","multipleOf":0.5})", "keyword 'multipleOf' at /");
  expect_refused(R"({"type":"integer","multipleOf":7})", "keyword 'multipleOf' at /");
  expect_refused(R"({"type":"number","minimum":0.5})", "keyword 'minimum' at /");
  expect_refused(R"({"type":"number","exclusiveMaximum":1e30})", "keyword 'exclusiveMaximum'");
  expect_refused(R"({"type":"integer","minimum":-1e300})", "keyword 'minimum' at /");
  expect_refused(R"({"type":"string","pattern":"(?=a)b"})", "keyword 'pattern' at /");
  expect_refused(R"({"type":"string","pattern":"(a)\\1"})", "backreference");
  expect_refused(R"({"type":"string","pattern":"a^b"})", "anchor");
  expect_refused(R"({"type":"string","pattern":"^(x|^y)$"})", "anchor");
  expect_refused(R"({"type":"string","pattern":"\\bword"})", "word boundary");
  expect_refused(R"({"type":"string","pattern":"\\p{L}"})", "keyword 'pattern'");
  expect_refused(R"({"type":"string","pattern":"[a"})", "keyword 'pattern'");
  expect_refused(R"({"type":"string","pattern":"a","minLength":3})", "keyword 'minLength' at /");
  expect_refused(R"({"type":"string","format":"date","maxLength":5})", "keyword 'maxLength'");
  expect_refused(R"({"type":"string","format":"date","pattern":"x"})", "keyword 'format'");
  expect_refused(R"({"enum":["a","bb"],"maxLength":1})", "keyword 'maxLength' at /");
  expect_refused(R"({"$ref":"https://example.com/s.json"})", "$ref 'https://example.com/s.json'");
  expect_refused(R"({"$ref":"#anchor"})", "$ref '#anchor'");
  expect_refused(R"({"$ref":"#/$defs/missing"})", "points to nothing");
  expect_refused(R"({"$defs":{"a~2":{}},"$ref":"#/$defs/a~2"})", "'~'");
  expect_refused(R"({"type":"strin"})", "'type' at /");
  expect_refused(R"({"properties":{"a":{"type":7}}})", "'type' at /properties/a");
  expect_refused(R"({"type":"object","required":"a"})", "'required' at /");
  expect_refused(R"({"type":"array","minItems":-1})", "'minItems' at /");
  expect_refused(R"({"anyOf":[]})", "'anyOf' at /");
  expect_refused(R"({"allOf":{}})", "'allOf' at /");
  expect_refused(R"({"enum":"a"})", "'enum' at /");
  expect_refused(R"({"properties":{"a":3}})", "/properties/a is not an object or a boolean");
  expect_refused("[]", "not an object or a boolean");
}

TEST(JsonSchemaRefusals, UnsatisfiableSchemas) {
  expect_refused("false", "no JSON value");
  expect_refused(R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "/allOf/1");
  expect_refused(R"({"type":"object","properties":{"a":false},"required":["a"]})", "'a'");
  expect_refused(R"({"type":"object","additionalProperties":false,"required":["a"]})",
                 "required property 'a'");
  expect_refused(R"({"type":"integer","minimum":5,"maximum":4})", "no JSON value");
  expect_refused(R"({"type":"array","minItems":3,"maxItems":2})", "no JSON value");
  expect_refused(R"({"type":"string","enum":[1,2]})", "no JSON value");
  expect_refused(R"({"anyOf":[false,{"not":{}}]})", "keyword 'not'");
}

TEST(JsonSchemaRefusals, RefCyclesWithoutBaseCase) {
  expect_refused(R"({"$ref":"#"})", "$ref cycle");
  expect_refused(
      R"({"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"})",
      "$ref cycle");
  expect_refused(R"({"type":"object","properties":{"self":{"$ref":"#"}},"required":["self"]})",
                 "$ref cycle");
  expect_refused(R"({"type":"array","items":{"$ref":"#"},"minItems":1})", "$ref cycle");
  // A ref merged with siblings cannot recurse forever.
  expect_refused(
      R"({"$defs":{"a":{"allOf":[{"$ref":"#/$defs/a"},{"type":"object"}]}},"$ref":"#/$defs/a"})",
      "$ref");
  expect_refused(R"({"$defs":{"a":{"$ref":"#/$defs/a","minimum":1}},"$ref":"#/$defs/a"})", "$ref");
  // ... while a base case makes it fine.
  EXPECT_TRUE(compile_json_schema(R"({"type":"array","items":{"$ref":"#"}})").ok());
}

TEST(JsonSchemaRefusals, HostileInputFailsCleanly) {
  // Bad JSON.
  for (const char* text : {"", "{", "[1,]", "{\"a\":1,}", "{'a':1}", "nul", "{\"a\":1} x",
                           "{\"type\":\"string\",\"type\":\"integer\"}", "\"\xff\"", "/* */{}"}) {
    Result<Grammar> g = compile_json_schema(text);
    EXPECT_FALSE(g.ok()) << text;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument) << text;
  }
  // Deep nesting.
  std::string deep;
  for (int i = 0; i < 200; ++i)
    deep += R"({"items":)";
  deep += "{}";
  for (int i = 0; i < 200; ++i)
    deep += "}";
  expect_refused(deep, "nesting deeper than 128");
  std::string deep_array(100000, '[');
  expect_refused(deep_array, "json_schema");
  // Too large.
  expect_refused(R"({"description":")" + std::string(2 << 20, 'x') + R"("})", "bytes (limit");
  // A huge enum is refused by size; a large one compiles.
  std::string big = R"({"enum":[)";
  for (int i = 0; i < 60000; ++i)
    big += (i ? ",\"" : "\"") + std::to_string(i) + "abc\"";
  big += "]}";
  expect_refused(big, "enum at / is too large");
  std::string large = R"({"enum":[)";
  for (int i = 0; i < 5000; ++i)
    large += (i ? "," : "") + std::to_string(i);
  large += "]}";
  Result<Grammar> g = compile_json_schema(large);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(accepts(*g, "4999"));
  EXPECT_FALSE(accepts(*g, "5000"));
  // Big counts.
  expect_refused(R"({"type":"array","maxItems":1000000})", "keyword 'maxItems' at / is too large");
  expect_refused(R"({"type":"array","minItems":20000})", "keyword 'minItems' at / is too large");
  expect_refused(R"({"type":"string","minLength":100000000})", "keyword 'minLength'");
  EXPECT_TRUE(compile_json_schema(R"({"type":"string","maxLength":4294967296})").ok());
  EXPECT_TRUE(compile_json_schema(R"({"type":"array","maxItems":18446744073709551615})").ok());
  // anyOf products explode: bounded work.
  std::string product = R"({"allOf":[)";
  for (int i = 0; i < 24; ++i)
    product += std::string(i ? "," : "") + R"({"anyOf":[{"type":"integer"},{"minimum":1}]})";
  product += "]}";
  expect_refused(product, "combinations");
  // Many refs to one definition compile once.
  std::string refs = R"({"$defs":{"d":{"type":"integer"}},"type":"array","prefixItems":[)";
  for (int i = 0; i < 2000; ++i)
    refs += std::string(i ? "," : "") + R"({"$ref":"#/$defs/d"})";
  refs += "]}";
  EXPECT_TRUE(compile_json_schema(refs).ok());
  // Options out of range.
  JsonSchemaOptions bad;
  bad.max_whitespace = -1;
  EXPECT_FALSE(compile_json_schema("{}", bad).ok());
}

TEST(JsonSchema, GrammarStaysLinearInProperties) {
  std::string schema = R"({"type":"object","properties":{)";
  for (int i = 0; i < 500; ++i)
    schema += (i ? "," : "") + fmt::format(R"("p{}":{{"type":"integer"}})", i);
  schema += R"(},"required":["p250"]})";
  Result<Grammar> g = compile_json_schema(schema);
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  size_t num_symbols = 0;
  for (const Rule& r : g->rules)
    for (const auto& alt : r.alternatives)
      num_symbols += alt.size();
  EXPECT_LT(g->rules.size(), 2000u);
  EXPECT_LT(num_symbols, 6000u);
  EXPECT_TRUE(accepts(*g, R"({"p250":1})"));
  EXPECT_TRUE(accepts(*g, R"({"p0":0,"p250":1,"p499":2})"));
  EXPECT_FALSE(accepts(*g, R"({"p0":0,"p499":2})"));
}

}  // namespace
}  // namespace pagoda::structured
