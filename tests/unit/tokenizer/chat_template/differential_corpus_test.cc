// Optional differential check: every file in $PAGODA_CHAT_TEMPLATE_CORPUS (e.g. the corpus
// a fuzz_chat_template run leaves behind) rendered by us and by jinja2 with the fuzzer's
// conversation. Skipped when the variable is unset. Cases where either side runs out of
// budget (our step/output limits, the oracle's time limit) are not compared.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "jinja/py_text.h"
#include "oracle_client.h"

namespace pagoda::tokenizer::testing {
namespace {

using json = nlohmann::ordered_json;

TEST(ChatTemplateDifferential, CorpusMatchesJinja2) {
  const char* dir = std::getenv("PAGODA_CHAT_TEMPLATE_CORPUS");
  if (dir == nullptr) GTEST_SKIP() << "set PAGODA_CHAT_TEMPLATE_CORPUS to a directory of templates";
  // The conversation and variables of tests/fuzz/chat_template/fuzz_chat_template.cc.
  const json messages = json::parse(R"J([
    {"role": "system", "content": "sys ✓"},
    {"role": "user", "content": "Hi {{ x }} \n\t 日本"},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "call12345", "type": "function",
      "function": {"name": "f", "arguments": {"a": 1, "b": [true, null, 2.5]}}}]},
    {"role": "tool", "tool_call_id": "call12345", "content": "{\"r\": 1}"},
    {"role": "assistant", "content": "done"},
    {"role": "user", "content": ["part", {"type": "text", "text": "t"}]}
  ])J");
  const json tools = json::parse(R"J([{"type": "function", "function": {"name": "f",
    "description": "d", "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}}])J");
  const json extra = json::parse(
      R"J({"n": 3, "f": -1.5, "s": "abc", "l": [3, 1, 2], "d": {"k": "v", "n": {"m": []}}})J");
  std::vector<Case> cases;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (!e.is_regular_file() || e.file_size() > 4096) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string source = ss.str();
    if (jinja::find_invalid_utf8(source) || source.find('\0') != std::string::npos) continue;
    Case c;
    c.name = e.path().filename().string();
    c.source = source;
    c.messages = messages;
    c.tools = tools;
    c.extra = extra;
    c.timeout_seconds = 5;
    cases.push_back(std::move(c));
  }
  std::string why;
  const auto expected = run_oracle(cases, &why);
  if (!expected) GTEST_SKIP() << "jinja2 oracle unavailable: " << why;
  ChatTemplateLimits limits;
  limits.max_steps = 2'000'000;
  limits.max_output_bytes = 1 << 20;
  int compared = 0, matched = 0, skipped = 0;
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto ours = render_ours(cases[k], limits);
    const bool our_limit = !ours.ok() && (ours.status().code() == StatusCode::kResourceExhausted ||
                                          ours.status().code() == StatusCode::kUnimplemented);
    // Python prints some objects with their memory address; those cannot match.
    const bool address =
        (*expected)[k].ok && (*expected)[k].output.find(" at 0x") != std::string::npos;
    if (our_limit || address || (*expected)[k].kind == "timeout") {
      ++skipped;
      continue;
    }
    ++compared;
    const std::string diff = compare(cases[k], (*expected)[k], ours);
    EXPECT_EQ(diff, "") << "source: " << json(cases[k].source).dump();
    if (diff.empty()) ++matched;
  }
  std::cout << "[chat-template] differential corpus: " << matched << "/" << compared
            << " match jinja2 (" << skipped
            << " skipped: our limits, unsupported features, or object addresses in the output)\n";
}

}  // namespace
}  // namespace pagoda::tokenizer::testing
