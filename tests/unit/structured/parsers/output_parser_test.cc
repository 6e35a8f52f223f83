// pagoda::OutputParser: each tool-call format (single and several calls, text around them, other
// key orders, string arguments, malformed calls staying content, truncation), both reasoning
// formats and their mix with tool calls, split invariance (whole == byte by byte == every cut
// point == random cuts) over every case and format, streamed arguments parsing as the expected
// JSON, the UTF-8 hold-back, hostile input, names and chat-template detection.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "pagoda/output_parser.h"
#include "unit/structured/parsers/output_parser_harness.h"

namespace pagoda {
namespace {

using testing::Merged;
using testing::parse_whole;
using testing::parse_with_cuts;

OutputParserOptions opts(ToolCallFormat tools, ReasoningFormat reasoning = ReasoningFormat::kNone) {
  OutputParserOptions o;
  o.tool_format = tools;
  o.reasoning = reasoning;
  o.id_prefix = "call_x_";
  return o;
}

// Parses `text` whole, byte by byte, at every single cut and at random cuts; all must agree
// and keep the delta protocol. Returns the whole-text result.
Merged parse_checked(const OutputParserOptions& options, std::string_view text) {
  const Merged whole = parse_whole(options, text);
  EXPECT_EQ(whole.protocol_error, "") << text;
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i)
    every.push_back(i);
  const Merged bytewise = parse_with_cuts(options, text, every);
  EXPECT_EQ(bytewise, whole) << "byte by byte: " << text << "\n"
                             << bytewise.describe() << "\nvs\n"
                             << whole.describe();
  for (size_t i = 0; i <= text.size(); ++i) {
    const Merged cut = parse_with_cuts(options, text, {i});
    if (!(cut == whole)) {
      ADD_FAILURE() << "cut at " << i << ": " << text << "\n" << cut.describe();
      break;
    }
  }
  std::mt19937 rng(static_cast<uint32_t>(text.size()));
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<size_t> cuts;
    for (size_t i = 1; i < text.size(); ++i) {
      if (rng() % 5 == 0) cuts.push_back(i);
    }
    const Merged random = parse_with_cuts(options, text, cuts);
    if (!(random == whole)) {
      ADD_FAILURE() << "random cuts: " << text << "\n" << random.describe();
      break;
    }
  }
  return whole;
}

nlohmann::json json_of(const std::string& s) {
  return nlohmann::json::parse(s, nullptr, /*allow_exceptions=*/false);
}

// ---- hermes ----

TEST(OutputParserHermes, OneCallAfterText) {
  const Merged m = parse_checked(opts(ToolCallFormat::kHermes),
                                 "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", "
                                 "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>");
  EXPECT_EQ(m.content, "Let me check.\n");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].id, "call_x_0");
  EXPECT_EQ(m.calls[0].name, "get_weather");
  EXPECT_EQ(m.calls[0].arguments, "{\"city\": \"Paris\"}");  // as written
  EXPECT_EQ(m.num_tool_calls, 1);
}

TEST(OutputParserHermes, SeveralCallsFlexibleWhitespace) {
  const Merged m = parse_checked(
      opts(ToolCallFormat::kHermes),
      "<tool_call>\n{ \"name\" :\"a\",\n  \"arguments\"\t: {\"x\": [1, {\"y\": \"}\\\"{\"}]} }\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\n");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[0].name, "a");
  EXPECT_EQ(json_of(m.calls[0].arguments), json_of(R"({"x": [1, {"y": "}\"{"}]})"));
  EXPECT_EQ(m.calls[1].id, "call_x_1");
  EXPECT_EQ(m.calls[1].name, "b");
  EXPECT_EQ(m.calls[1].arguments, "{}");
}

TEST(OutputParserHermes, ArgumentsStreamBeforeTheCallEnds) {
  OutputParser parser(opts(ToolCallFormat::kHermes));
  ParsedDelta d = parser.feed("<tool_call>\n{\"name\": \"f\", \"argum");
  EXPECT_TRUE(d.empty());
  d = parser.feed("ents\": {\"q\": \"hel");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[0].id, "call_x_0");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"q\": \"hel");
  EXPECT_EQ(parser.num_tool_calls(), 1);
  d = parser.feed("lo\"}}\n</tool_");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].id, "");
  EXPECT_EQ(d.tool_calls[0].arguments, "lo\"}");
  d = parser.feed("call>");
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(parser.finish().empty());
}

TEST(OutputParserHermes, OtherShapesAreReadWhole) {
  Merged m = parse_checked(opts(ToolCallFormat::kHermes),
                           "<tool_call>{\"arguments\": {\"x\": 1}, \"name\": \"f\"}</tool_call>");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].name, "f");
  EXPECT_EQ(m.calls[0].arguments, "{\"x\":1}");
  m = parse_checked(opts(ToolCallFormat::kHermes),
                    "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 2}\"}</tool_call>");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].arguments, "{\"x\": 2}");
  EXPECT_EQ(m.content, "");
}

TEST(OutputParserHermes, MalformedCallsStayContent) {
  for (const std::string text : {
           "<tool_call>not json</tool_call> after",
           "<tool_call>{\"name\": \"f\"}</tool_call>",
           "<tool_call>{\"name\": 3, \"arguments\": {}}</tool_call>",
           "<tool_call>{\"arguments\": \"not an object\", \"name\": \"f\"}</tool_call>",
           "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
           "a <tool> b <tool_call",
           "<tool_call>{\"name\": \"f\", \"argu",
       }) {
    const Merged m = parse_checked(opts(ToolCallFormat::kHermes), text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.calls.empty()) << text;
    EXPECT_EQ(m.num_tool_calls, 0);
  }
}

TEST(OutputParserHermes, UnclosedTagStillACall) {
  Merged m = parse_checked(opts(ToolCallFormat::kHermes),
                           "<tool_call>\n{\"arguments\": {}, \"name\": \"f\"}\n");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.content, "");
  // Truncated inside the arguments: the call stays, with what was streamed.
  m = parse_checked(opts(ToolCallFormat::kHermes),
                    "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1, 2");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].arguments, "{\"a\": [1, 2");
  EXPECT_EQ(m.content, "");
}

TEST(OutputParserHermes, TextAfterCallsAndTagsInStrings) {
  const Merged m = parse_checked(
      opts(ToolCallFormat::kHermes),
      "<tool_call>{\"name\": \"html\", \"arguments\": {\"s\": \"<b></tool_call>\"}}</tool_call>\n\n"
      "Done.  <tool_call>{\"name\": \"g\", \"arguments\": {}}}</tool_call>");
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(json_of(m.calls[0].arguments), json_of(R"({"s": "<b></tool_call>"})"));
  EXPECT_EQ(m.calls[1].arguments, "{}");
  // Text after a call is content as written; a stray '}' after the object stays content.
  EXPECT_EQ(m.content, "\n\nDone.  }</tool_call>");
}

TEST(OutputParserHermes, CallEndsAtAnEarlyTag) {
  const Merged m = parse_checked(opts(ToolCallFormat::kHermes),
                                 "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1</tool_call>"
                                 "ok");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].arguments, "{\"a\": 1");
  EXPECT_EQ(m.content, "ok");
}

// ---- llama3_json ----

TEST(OutputParserLlama3, Calls) {
  Merged m = parse_checked(opts(ToolCallFormat::kLlama3Json),
                           "{\"name\": \"f\", \"parameters\": {\"a\": 1}}");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].name, "f");
  EXPECT_EQ(m.calls[0].arguments, "{\"a\": 1}");
  EXPECT_EQ(m.content, "");
  m = parse_checked(opts(ToolCallFormat::kLlama3Json),
                    "\n<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", "
                    "\"arguments\": {\"b\": [1, 2]}};{\"parameters\": {\"c\": null}, \"name\": "
                    "\"h\"}\n");
  ASSERT_EQ(m.calls.size(), 3u);
  EXPECT_EQ(m.calls[1].name, "g");
  EXPECT_EQ(json_of(m.calls[1].arguments), json_of(R"({"b": [1, 2]})"));
  EXPECT_EQ(m.calls[2].name, "h");
  EXPECT_EQ(m.calls[2].arguments, "{\"c\":null}");
  EXPECT_EQ(m.content, "");
}

TEST(OutputParserLlama3, ContentAndNonCalls) {
  for (const std::string text :
       {"Hello {x}", " {\"foo\": 1} and more", "<|python_tag|>print(1)", "{\"name\": \"f\"}",
        "{\"name\": \"f\", \"parameters\": 1}", "{\"name\": \"f\", \"parameters\"", "<|python"}) {
    const Merged m = parse_checked(opts(ToolCallFormat::kLlama3Json), text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.calls.empty()) << text;
  }
  // Truncated inside the arguments: still a call.
  const Merged t =
      parse_checked(opts(ToolCallFormat::kLlama3Json), "{\"name\": \"f\", \"parameters\": {\"a\"");
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].arguments, "{\"a\"");
  EXPECT_EQ(t.content, "");
  // A call, then text: the text is content (the separator whitespace after the call is dropped).
  const Merged m = parse_checked(opts(ToolCallFormat::kLlama3Json),
                                 "{\"name\": \"f\", \"parameters\": {}}  see above");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.content, "see above");
}

// ---- mistral ----

TEST(OutputParserMistral, Calls) {
  const Merged m = parse_checked(
      opts(ToolCallFormat::kMistral),
      "Sure. [TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": \"x]\"}}, {\"name\": \"g\", "
      "\"arguments\": {}, \"id\": \"abc123xyz\"},{\"id\": \"q\", \"arguments\": {\"k\": 1}, "
      "\"name\": \"h\"}]\n");
  EXPECT_EQ(m.content, "Sure. ");
  ASSERT_EQ(m.calls.size(), 3u);
  EXPECT_EQ(m.calls[0].arguments, "{\"a\": \"x]\"}");
  EXPECT_EQ(m.calls[1].name, "g");
  EXPECT_EQ(m.calls[1].arguments, "{}");
  EXPECT_EQ(m.calls[2].name, "h");
  EXPECT_EQ(m.calls[2].arguments, "{\"k\":1}");
}

TEST(OutputParserMistral, MalformedStaysContent) {
  for (const std::string text : {"[TOOL_CALLS] hello", "[TOOL_CALLS][{\"x\": 1}] tail", "a [TOOL",
                                 "[TOOL_CALLS][{\"name\": \"f\", \"arg"}) {
    const Merged m = parse_checked(opts(ToolCallFormat::kMistral), text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.calls.empty()) << text;
  }
}

// Mistral's v11 form: [TOOL_CALLS]name[ARGS]{arguments}, one call per tag, arguments streamed.
TEST(OutputParserMistral, NameArgsForm) {
  const Merged m =
      parse_checked(opts(ToolCallFormat::kMistral),
                    "Checking. [TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris}\", \"d\": [1, {}]}"
                    "[TOOL_CALLS]ping[ARGS] {}\n");
  EXPECT_EQ(m.content, "Checking. ");
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[0].name, "get_weather");
  EXPECT_EQ(m.calls[0].arguments, "{\"city\": \"Paris}\", \"d\": [1, {}]}");
  EXPECT_EQ(json_of(m.calls[0].arguments)["city"], "Paris}");
  EXPECT_EQ(m.calls[1].name, "ping");
  EXPECT_EQ(m.calls[1].arguments, "{}");
  EXPECT_NE(m.calls[0].id, m.calls[1].id);
  // The call is announced when its arguments open, before the output ends.
  OutputParser parser(opts(ToolCallFormat::kMistral));
  ParsedDelta d = parser.feed("[TOOL_CALLS]f[ARGS]{\"a\": 1");
  ASSERT_EQ(d.tool_calls.size(), 1u);
  EXPECT_EQ(d.tool_calls[0].name, "f");
  EXPECT_EQ(d.tool_calls[0].arguments, "{\"a\": 1");
}

TEST(OutputParserMistral, NameArgsMalformedStaysContent) {
  for (const std::string& text : std::vector<std::string>{
           "[TOOL_CALLS]f[ARG]{}", "[TOOL_CALLS]f(x)", "[TOOL_CALLS]f[ARGS]x{}",
           "[TOOL_CALLS]f[ARGS]", "[TOOL_CALLS]" + std::string(80, 'n') + "[ARGS]{}"}) {
    const Merged m = parse_checked(opts(ToolCallFormat::kMistral), text);
    EXPECT_EQ(m.content, text);
    EXPECT_TRUE(m.calls.empty()) << text;
  }
}

// ---- reasoning ----

TEST(OutputParserReasoning, DeepSeekR1) {
  const auto r1 = opts(ToolCallFormat::kNone, ReasoningFormat::kDeepSeekR1);
  Merged m = parse_checked(r1, "I think.\n</think>\n\nThe answer.");
  EXPECT_EQ(m.reasoning, "I think.\n");
  EXPECT_EQ(m.content, "The answer.");
  m = parse_checked(r1, "\n<think>\nhmm</think>x");
  EXPECT_EQ(m.reasoning, "\nhmm");
  EXPECT_EQ(m.content, "x");
  m = parse_checked(r1, "no end <think> </thin");
  EXPECT_EQ(m.reasoning, "no end <think> </thin");
  EXPECT_EQ(m.content, "");
  m = parse_checked(r1, "</think>only answer");
  EXPECT_EQ(m.reasoning, "");
  EXPECT_EQ(m.content, "only answer");
  m = parse_checked(r1, "<<think>x</think>y");
  EXPECT_EQ(m.reasoning, "<<think>x");
  EXPECT_EQ(m.content, "y");
}

TEST(OutputParserReasoning, Qwen3) {
  const auto q = opts(ToolCallFormat::kNone, ReasoningFormat::kQwen3);
  Merged m = parse_checked(q, "<think>\nabc\n</think>\n\nanswer </think>");
  EXPECT_EQ(m.reasoning, "\nabc\n");
  EXPECT_EQ(m.content, "answer </think>");
  m = parse_checked(q, "  answer <think>x</think>");
  EXPECT_EQ(m.reasoning, "");
  EXPECT_EQ(m.content, "  answer <think>x</think>");
  m = parse_checked(q, "\n <thin");
  EXPECT_EQ(m.content, "\n <thin");
  m = parse_checked(q, "<think>unfinished");
  EXPECT_EQ(m.reasoning, "unfinished");
  EXPECT_EQ(m.content, "");
}

TEST(OutputParserReasoning, WithToolCalls) {
  const Merged m = parse_checked(opts(ToolCallFormat::kHermes, ReasoningFormat::kQwen3),
                                 "<think>maybe <tool_call>{\"name\": \"no\", \"arguments\": {}}"
                                 "</tool_call></think>\n\n<tool_call>\n{\"name\": \"yes\", "
                                 "\"arguments\": {\"v\": true}}\n</tool_call>");
  EXPECT_EQ(m.reasoning, "maybe <tool_call>{\"name\": \"no\", \"arguments\": {}}</tool_call>");
  EXPECT_EQ(m.content, "");
  ASSERT_EQ(m.calls.size(), 1u);
  EXPECT_EQ(m.calls[0].name, "yes");
  const Merged l = parse_checked(opts(ToolCallFormat::kLlama3Json, ReasoningFormat::kDeepSeekR1),
                                 "ok</think>\n{\"name\": \"f\", \"parameters\": {}}");
  EXPECT_EQ(l.reasoning, "ok");
  ASSERT_EQ(l.calls.size(), 1u);
}

// ---- every case, every format: split invariance and the byte budget ----

const std::vector<std::string>& corpus() {
  static const std::vector<std::string> texts = {
      "",
      "plain answer",
      " \n ",
      "<think>a</think>\n<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"\\\"}\"}}"
      "</tool_call>",
      "x</think><tool_call><tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call></tool_call>",
      "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"s\": \"a;b\"}} ; {\"name\": \"g\"",
      "[TOOL_CALLS][TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}, ] [TOOL_CALLS][]",
      "[TOOL_CALLS]f[ARGS]{\"a\": \"[ARGS]\"} [TOOL_CALLS]g[AR[TOOL_CALLS]h[ARGS] {\"b\": [}",
      "{\"name\": \"\\u00e9\\n\", \"arguments\": {\"k\": \"\\ud83d\\ude00\"}}",
      "<tool_call>{\"name\": \"f\\x\", \"arguments\": {}}</tool_call>",
      "h\xC3\xA9llo \xE4\xB8\x96\xE7\x95\x8C <tool_call>{\"name\": \"\xE4\xB8\x96\", "
      "\"arguments\": {\"\xE7\x95\x8C\": 1}}</tool_call> \xF0\x9F\x98\x80",
      "\xFF\xC3<think>\x80\xE4\xB8</think>\xF0\x9F<tool_call>\xC3",
      "<<tool_call>{{\"name\": \"f\", \"arguments\": {}}</tool_call>",
      "   <think>   </think>   {\"name\": \"f\", \"arguments\": {\"x\": 1}} {\"name\": \"g\", "
      "\"arguments\": {}} tail",
  };
  return texts;
}

TEST(OutputParserInvariance, EveryFormatEveryCut) {
  for (ToolCallFormat tools : {ToolCallFormat::kNone, ToolCallFormat::kHermes,
                               ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral}) {
    for (ReasoningFormat reasoning :
         {ReasoningFormat::kNone, ReasoningFormat::kDeepSeekR1, ReasoningFormat::kQwen3}) {
      for (const std::string& text : corpus()) {
        SCOPED_TRACE(std::string(to_string(tools)) + "/" + std::string(to_string(reasoning)));
        const Merged m = parse_checked(opts(tools, reasoning), text);
        EXPECT_LE(m.content.size() + m.reasoning.size(), text.size());
        EXPECT_EQ(m.num_tool_calls, static_cast<int32_t>(m.calls.size()));
        if (tools == ToolCallFormat::kNone && reasoning == ReasoningFormat::kNone) {
          EXPECT_EQ(m.content, text);
        }
      }
    }
  }
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    const size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

TEST(OutputParserUtf8, DeltasNeverEndInsideACharacter) {
  const std::string text =
      "\xE6\x80\x9D\xE8\x80\x83</think>\xC3\xA9t\xC3\xA9 <tool_call>{\"name\": \"f\", "
      "\"arguments\": {\"v\": \"\xF0\x9F\x98\x80\xE4\xB8\x96\"}}</tool_call>";
  OutputParser parser(opts(ToolCallFormat::kHermes, ReasoningFormat::kDeepSeekR1));
  Merged merged;
  for (char c : text) {
    const ParsedDelta d = parser.feed(std::string_view(&c, 1));
    EXPECT_TRUE(valid_utf8(d.content) && valid_utf8(d.reasoning));
    for (const ToolCallDelta& call : d.tool_calls)
      EXPECT_TRUE(valid_utf8(call.arguments));
    merged.merge(d);
  }
  merged.merge(parser.finish());
  EXPECT_EQ(merged.reasoning, "\xE6\x80\x9D\xE8\x80\x83");
  EXPECT_EQ(merged.content, "\xC3\xA9t\xC3\xA9 ");
  ASSERT_EQ(merged.calls.size(), 1u);
  EXPECT_EQ(json_of(merged.calls[0].arguments)["v"], "\xF0\x9F\x98\x80\xE4\xB8\x96");
}

TEST(OutputParserHostile, RandomBytesAndDeepNesting) {
  std::mt19937 rng(7);
  const std::string alphabet = "<>/{}[]\":,; \n\\tool_call|python_tag TOOL_CALLS think name";
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const size_t len = rng() % 120;
    for (size_t i = 0; i < len; ++i)
      text.push_back(rng() % 4 == 0 ? static_cast<char>(rng() % 256)
                                    : alphabet[rng() % alphabet.size()]);
    const auto tools = static_cast<ToolCallFormat>(trial % 4);
    const auto reasoning = static_cast<ReasoningFormat>(trial % 3);
    const Merged whole = parse_whole(opts(tools, reasoning), text);
    EXPECT_EQ(whole.protocol_error, "");
    std::vector<size_t> every;
    for (size_t i = 1; i < text.size(); ++i)
      every.push_back(i);
    EXPECT_EQ(parse_with_cuts(opts(tools, reasoning), text, every), whole) << text;
  }
  // Deep nesting is read whole without recursion trouble, and refused (content).
  const std::string deep = "<tool_call>{\"arguments\": " + std::string(100000, '[') +
                           ", \"name\": "
                           "\"f\"}</tool_call>";
  const Merged m = parse_whole(opts(ToolCallFormat::kHermes), deep);
  EXPECT_EQ(m.content, deep);
  const std::string deep_args =
      "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": " + std::string(100000, '[') +
      "}}</tool_call>";
  EXPECT_EQ(parse_whole(opts(ToolCallFormat::kHermes), deep_args).calls.size(), 1u);
}

// ---- names and detection ----

TEST(OutputParserNames, RoundTrip) {
  for (ToolCallFormat f : {ToolCallFormat::kNone, ToolCallFormat::kHermes,
                           ToolCallFormat::kLlama3Json, ToolCallFormat::kMistral}) {
    EXPECT_EQ(tool_call_format_from_name(to_string(f)), f);
  }
  for (ReasoningFormat f :
       {ReasoningFormat::kNone, ReasoningFormat::kDeepSeekR1, ReasoningFormat::kQwen3}) {
    EXPECT_EQ(reasoning_format_from_name(to_string(f)), f);
  }
  EXPECT_EQ(to_string(ToolCallFormat::kLlama3Json), "llama3_json");
  EXPECT_EQ(to_string(ReasoningFormat::kDeepSeekR1), "deepseek_r1");
  EXPECT_EQ(tool_call_format_from_name("Hermes"), std::nullopt);
  EXPECT_EQ(reasoning_format_from_name("deepseek-r1"), std::nullopt);
}

TEST(OutputParserDetect, FixtureTemplates) {
  const std::string dir = std::string(PAGODA_FIXTURES_DIR) + "/chat-templates/";
  const std::vector<std::pair<std::string, ToolCallFormat>> expected = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3Json},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral},
      {"google-gemma-2-2b-it.jinja", ToolCallFormat::kNone},
      {"microsoft-Phi-3.5-mini-instruct.jinja", ToolCallFormat::kNone},
      // DeepSeek's own <｜tool▁call▁begin｜> format is not one we parse.
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::kNone},
  };
  for (const auto& [file, format] : expected) {
    std::ifstream in(dir + file);
    if (!in) GTEST_SKIP() << "fixture missing: " << dir + file;
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_EQ(detect_tool_call_format(ss.str()), format) << file;
  }
  EXPECT_EQ(detect_tool_call_format(""), ToolCallFormat::kNone);
}

}  // namespace
}  // namespace pagoda
