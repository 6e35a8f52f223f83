// tool_call_grammar: each format's envelope, named vs required, parallel calls, arguments checked
// against each tool's schema, and spec validation naming the tool.
#include <gtest/gtest.h>

#include <string>

#include "structured/recognizer.h"
#include "structured/tool_call_grammar.h"

namespace pagoda::structured {
namespace {

bool accepts(const Grammar& g, std::string_view text) {
  Result<bool> r = grammar_accepts(g, text);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() && *r;
}

const char* kTools = R"([
  {"type":"function","function":{"name":"get_weather","description":"d",
   "parameters":{"type":"object","properties":{"city":{"type":"string"},
                 "unit":{"enum":["c","f"]}},"required":["city"]}}},
  {"type":"function","function":{"name":"ping"}}
])";

Grammar grammar_for(const std::string& format, const std::string& extra,
                    const JsonSchemaOptions& options = {}) {
  const std::string spec = R"({"format":")" + format + R"(","tools":)" + kTools +
                           (extra.empty() ? "" : "," + extra) + "}";
  Result<Grammar> g = tool_call_grammar(spec, options);
  EXPECT_TRUE(g.ok()) << spec << ": " << g.status().to_string();
  return g.ok() ? std::move(*g) : Grammar{};
}

// Mode auto: the text of one call after the "<tool_call>" that triggered the constraint.
TEST(ToolCallGrammar, HermesAutoIsOneCallAfterTheTag) {
  const Grammar g = grammar_for("hermes", R"("mode":"auto","parallel":true)");
  EXPECT_TRUE(accepts(g, "\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g,
                       "\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
                       "{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
}

// Mode auto, llama3_json: the rest of one call after its trigger {"name".
TEST(ToolCallGrammar, Llama3JsonAutoIsTheRestOfOneCall) {
  const Grammar g = grammar_for("llama3_json", R"("mode":"auto","parallel":true)");
  EXPECT_TRUE(accepts(g, ": \"ping\", \"parameters\": {}}"));
  EXPECT_TRUE(accepts(g, ":\"get_weather\",\"parameters\":{\"city\":\"Oslo\"}}"));
  EXPECT_FALSE(accepts(g, "{\"name\": \"ping\", \"parameters\": {}}"));
  EXPECT_FALSE(accepts(g,
                       ": \"ping\", \"parameters\": {}}; {\"name\": \"ping\", "
                       "\"parameters\": {}}"));
  EXPECT_FALSE(accepts(g, ": \"get_weather\", \"parameters\": {}}"));
  EXPECT_FALSE(accepts(g, ": \"pong\", \"parameters\": {}}"));
}

// Mode auto, mistral: the list after [TOOL_CALLS], several calls when parallel.
TEST(ToolCallGrammar, MistralAutoIsTheListAfterItsTag) {
  const Grammar g = grammar_for("mistral", R"("mode":"auto","parallel":true)");
  EXPECT_TRUE(accepts(g, "[{\"name\": \"ping\", \"arguments\": {}}]"));
  EXPECT_TRUE(accepts(g,
                      "[{\"name\": \"ping\", \"arguments\": {}}, {\"name\": \"get_weather\", "
                      "\"arguments\": {\"city\": \"Oslo\"}}]"));
  EXPECT_FALSE(accepts(g, "[TOOL_CALLS][{\"name\": \"ping\", \"arguments\": {}}]"));
  EXPECT_FALSE(accepts(g, "[]"));
  const Grammar one = grammar_for("mistral", R"("mode":"auto","parallel":false)");
  EXPECT_TRUE(accepts(one, "[{\"name\": \"ping\", \"arguments\": {}}]"));
  EXPECT_FALSE(accepts(one,
                       "[{\"name\": \"ping\", \"arguments\": {}}, {\"name\": \"ping\", "
                       "\"arguments\": {}}]"));
}

TEST(ToolCallGrammar, Hermes) {
  const Grammar g = grammar_for("hermes", "");
  EXPECT_TRUE(accepts(g,
                      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                      "\"Paris\"}}\n</tool_call>"));
  EXPECT_TRUE(accepts(g,
                      "<tool_call>\n{\"name\":\"get_weather\",\"arguments\":{\"city\":\"P\","
                      "\"unit\":\"c\"}}\n</tool_call>"));
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(
      accepts(g, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {\"x\": 1}}\n</tool_call>"));
  EXPECT_FALSE(
      accepts(g, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "<tool_call>\n{\"name\": \"other\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(g, "{\"name\": \"ping\", \"arguments\": {}}"));
  // One call only unless parallel.
  const std::string two =
      "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>";
  EXPECT_FALSE(accepts(g, two));
  const Grammar parallel = grammar_for("hermes", R"("parallel":true)");
  EXPECT_TRUE(accepts(parallel, two));
  EXPECT_TRUE(
      accepts(parallel, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(parallel, ""));
}

TEST(ToolCallGrammar, Llama3Json) {
  const Grammar g = grammar_for("llama3_json", "");
  EXPECT_TRUE(accepts(g, R"({"name": "get_weather", "parameters": {"city": "Oslo"}})"));
  EXPECT_FALSE(accepts(g, R"({"name": "get_weather", "arguments": {"city": "Oslo"}})"));
  const Grammar parallel = grammar_for("llama3_json", R"("parallel":true)");
  EXPECT_TRUE(accepts(parallel,
                      R"({"name": "ping", "parameters": {}}; {"name": "ping", "parameters": {}})"));
  EXPECT_FALSE(
      accepts(g, R"({"name": "ping", "parameters": {}}; {"name": "ping", "parameters": {}})"));
}

TEST(ToolCallGrammar, Mistral) {
  const Grammar g = grammar_for("mistral", "");
  EXPECT_TRUE(
      accepts(g, R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Nice"}}])"));
  EXPECT_FALSE(accepts(g, R"([{"name": "get_weather", "arguments": {"city": "Nice"}}])"));
  EXPECT_FALSE(accepts(
      g, R"([TOOL_CALLS][{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}])"));
  const Grammar parallel = grammar_for("mistral", R"("parallel":true)");
  EXPECT_TRUE(accepts(
      parallel,
      R"([TOOL_CALLS][{"name": "ping", "arguments": {}}, {"name": "ping", "arguments": {}}])"));
}

TEST(ToolCallGrammar, NamedAllowsOnlyThatFunction) {
  const Grammar g = grammar_for("hermes", R"("mode":"named","name":"ping")");
  EXPECT_TRUE(accepts(g, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(
      g,
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P\"}}\n</tool_call>"));
}

TEST(ToolCallGrammar, CompactWhitespaceIsTheTemplateSpacing) {
  JsonSchemaOptions compact;
  compact.flexible_whitespace = false;
  const Grammar g = grammar_for("llama3_json", "", compact);
  EXPECT_TRUE(accepts(g, R"({"name": "get_weather", "parameters": {"city":"Oslo"}})"));
  EXPECT_FALSE(accepts(g, R"({"name":"get_weather","parameters":{"city":"Oslo"}})"));
  EXPECT_FALSE(accepts(g, R"({"name": "get_weather", "parameters": {"city": "Oslo"}})"));
}

TEST(ToolCallGrammar, FlatToolsAndMissingParameters) {
  Result<Grammar> g = tool_call_grammar(
      R"({"format":"llama3_json","tools":[{"name":"a"},{"name":"b","parameters":{"type":"integer"}}]})");
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  EXPECT_TRUE(accepts(*g, R"({"name": "a", "parameters": {}})"));
  EXPECT_TRUE(accepts(*g, R"({"name": "b", "parameters": 7})"));
  EXPECT_FALSE(accepts(*g, R"({"name": "a", "parameters": 7})"));
}

void expect_refused(const std::string& spec, const std::string& needle) {
  Result<Grammar> g = tool_call_grammar(spec);
  ASSERT_FALSE(g.ok()) << spec;
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find(needle), std::string::npos)
      << g.status().message() << "\nexpected: " << needle;
}

TEST(ToolCallGrammar, SpecValidationNamesTheTool) {
  expect_refused("{", "invalid JSON");
  expect_refused("[]", "JSON object");
  expect_refused(R"({"tools":[{"name":"a"}]})", "'format'");
  expect_refused(R"({"format":"xml","tools":[{"name":"a"}]})", "format 'xml'");
  expect_refused(R"({"format":"hermes","tools":[]})", "'tools'");
  expect_refused(R"({"format":"hermes","tools":[{"name":""}]})", "tools[0].name");
  expect_refused(R"({"format":"hermes","tools":[{"name":"a"},{"name":"a"}]})",
                 "tools[1].name 'a' repeats");
  expect_refused(R"({"format":"hermes","tools":[{"name":"a"},{"name":"b"},
                    {"type":"function","function":{"name":"c","parameters":{"not":{}}}}]})",
                 "tools[2].function.parameters: json_schema: keyword 'not' at /");
  expect_refused(R"({"format":"hermes","tools":[{"name":"a","parameters":{"$ref":"#"}}]})",
                 "tools[0].parameters: json_schema");
  expect_refused(R"({"format":"hermes","mode":"named","tools":[{"name":"a"}]})", "'name'");
  expect_refused(R"({"format":"hermes","mode":"named","name":"b","tools":[{"name":"a"}]})",
                 "none of the tools");
  expect_refused(R"({"format":"hermes","mode":"sometimes","tools":[{"name":"a"}]})",
                 "mode 'sometimes'");
  expect_refused(R"({"format":"hermes","tools":[{"name":"a"}],"extra":1})", "unknown key 'extra'");
  expect_refused(
      R"({"format":"hermes","tools":[{"type":"function","function":{"name":"a","x":1}}]})",
      "unknown key 'x' in tools[0].function");
  expect_refused(R"({"format":"hermes","tools":[{"type":"tool","function":{"name":"a"}}]})",
                 "tools[0].type");
  expect_refused(R"({"format":"hermes","parallel":"yes","tools":[{"name":"a"}]})", "'parallel'");
}

}  // namespace
}  // namespace pagoda::structured
