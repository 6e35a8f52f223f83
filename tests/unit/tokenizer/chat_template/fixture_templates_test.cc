// Every real chat template in the shared fixtures, rendered by us and by python3-jinja2 (as
// transformers configures it) for system, multi-turn, no-system, unicode and tool
// conversations, with and without the generation prompt: outputs must be byte-identical,
// and conversations a template rejects must be rejected with the same message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "oracle_client.h"
#include "test_support.h"

namespace pagoda::tokenizer::testing {
namespace {

using json = nlohmann::ordered_json;

json msg(const char* role, json content) {
  return json{{"role", role}, {"content", content}};
}

json weather_tools() {
  return json::parse(R"J([
    {"type": "function", "function": {
      "name": "get_current_weather",
      "description": "Get the current weather in a given location",
      "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Unit"}},
        "required": ["location"]}}},
    {"type": "function", "function": {
      "name": "get_time", "description": "Current time (UTC offset in hours, e.g. -3.5)",
      "parameters": {"type": "object", "properties": {
        "offset": {"type": "number", "description": "Hours from UTC"},
        "zones": {"type": "array", "items": {"type": "string"}, "description": "Zone names"}},
        "required": []}}}
  ])J");
}

// An assistant tool call; `arguments` as a JSON object or as the OpenAI-style string.
json tool_call_message(bool string_arguments) {
  json args = {{"location", "Paris, France"}, {"unit", "celsius"}};
  json call = {{"id", "call12345"},
               {"type", "function"},
               {"function",
                {{"name", "get_current_weather"},
                 {"arguments", string_arguments ? json(args.dump()) : args}}}};
  return json{{"role", "assistant"}, {"content", nullptr}, {"tool_calls", json::array({call})}};
}

struct Conversation {
  std::string name;
  json messages;
  json tools;
};

std::vector<Conversation> conversations() {
  std::vector<Conversation> out;
  out.push_back(
      {"system_user",
       json::array({msg("system", "You are a terse assistant."), msg("user", "What is 2+2?")}),
       nullptr});
  out.push_back(
      {"multi_turn",
       json::array({msg("system", "Be helpful."), msg("user", "Hi!"),
                    msg("assistant", "Hello! How can I help?"), msg("user", "Tell me a joke.")}),
       nullptr});
  out.push_back({"no_system",
                 json::array({msg("user", "Hi!"), msg("assistant", "Hello."), msg("user", "Bye.")}),
                 nullptr});
  out.push_back({"single_user", json::array({msg("user", "  padded question  \n")}), nullptr});
  out.push_back(
      {"unicode_quotes_newlines",
       json::array(
           {msg("system", "Réponds en français. «Guillemets» and \"quotes\" and 'apostrophes'"),
            msg("user", "Line one\nLine two\n\tTabbed 日本語 😀 \\ backslash {{ not jinja }}"),
            msg("assistant", "D'accord — “curly” quotes, ẞ ß, 中文\n\n"),
            msg("user", "{% raw %} and </s> <|im_end|>")}),
       nullptr});
  out.push_back({"assistant_last",
                 json::array({msg("user", "Start"), msg("assistant", "Partial answer")}), nullptr});
  out.push_back(
      {"content_parts",
       json::array({msg("system", json::array({json{{"type", "text"}, {"text", "Sys"}}})),
                    msg("user", json::array({json{{"type", "text"}, {"text", "Describe:"}},
                                             json{{"type", "image_url"},
                                                  {"image_url", {{"url", "x.png"}}}}})),
                    msg("assistant", json::array({json{{"type", "text"}, {"text", "A cat."}}})),
                    msg("user", "Thanks")}),
       nullptr});
  out.push_back({"thinking",
                 json::array({msg("user", "2+2?"),
                              msg("assistant", "<think>\nadd them\n</think>\n\nIt is 4."),
                              msg("user", "And 3+3?")}),
                 nullptr});
  for (bool string_args : {false, true}) {
    const std::string suffix = string_args ? "_string_args" : "_object_args";
    out.push_back({"tools_only" + suffix,
                   json::array({msg("user", "What's the weather in Paris?")}), weather_tools()});
    json full =
        json::array({msg("system", "You can call tools."),
                     msg("user", "What's the weather in Paris?"), tool_call_message(string_args),
                     json{{"role", "tool"},
                          {"tool_call_id", "call12345"},
                          {"name", "get_current_weather"},
                          {"content", "{\"temperature\": 22, \"unit\": \"celsius\"}"}},
                     msg("assistant", "It is 22 °C in Paris."), msg("user", "Thanks!")});
    out.push_back({"tool_round_trip" + suffix, full, weather_tools()});
    json no_system = full;
    no_system.erase(no_system.begin());
    out.push_back({"tool_round_trip_no_system" + suffix, no_system, weather_tools()});
  }
  return out;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ChatTemplateFixtures, MatchesJinja2OnEveryTemplateAndConversation) {
  const auto dir = pagoda::testing::fixture("chat-templates");
  PAGODA_REQUIRE_FIXTURE(dir);
  std::vector<Case> cases;
  std::vector<std::string> owner;
  std::vector<std::filesystem::path> files;
  // PAGODA_EXTRA_CHAT_TEMPLATES: an optional directory of further *.jinja files to check.
  std::vector<std::filesystem::path> dirs = {dir};
  if (const char* extra = std::getenv("PAGODA_EXTRA_CHAT_TEMPLATES")) dirs.emplace_back(extra);
  for (const auto& d : dirs) {
    for (const auto& e : std::filesystem::directory_iterator(d)) {
      if (e.path().extension() == ".jinja") files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  for (const auto& path : files) {
    const std::string source = read_file(path);
    for (const Conversation& conv : conversations()) {
      for (bool agp : {true, false}) {
        Case c;
        c.name = path.stem().string() + "/" + conv.name + (agp ? "/gen" : "/nogen");
        c.source = source;
        c.messages = conv.messages;
        c.tools = conv.tools;
        c.add_generation_prompt = agp;
        cases.push_back(std::move(c));
        owner.push_back(path.stem().string());
      }
    }
  }
  std::string why;
  const auto expected = run_oracle(cases, &why);
  if (!expected) GTEST_SKIP() << "jinja2 oracle unavailable: " << why;
  ASSERT_EQ(expected->size(), cases.size());
  std::map<std::string, std::pair<int, int>> per_template;  // passed, total
  std::map<std::string, int> rendered;                      // cases jinja2 renders
  for (size_t k = 0; k < cases.size(); ++k) {
    const std::string diff = compare(cases[k], (*expected)[k], render_ours(cases[k]));
    EXPECT_EQ(diff, "");
    auto& [passed, total] = per_template[owner[k]];
    ++total;
    if (diff.empty()) ++passed;
    if ((*expected)[k].ok) ++rendered[owner[k]];
  }
  for (const auto& [name, counts] : per_template) {
    std::cout << "[chat-template] " << name << ": " << counts.first << "/" << counts.second
              << " match jinja2 (" << rendered[name] << " render, "
              << counts.second - rendered[name] << " raise in both)\n";
  }
}

}  // namespace
}  // namespace pagoda::tokenizer::testing
