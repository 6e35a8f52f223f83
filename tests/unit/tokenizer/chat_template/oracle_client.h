// Runs oracle.py (python3-jinja2 configured like transformers) on a batch of chat-template
// cases and compares our ChatTemplate with it. One python process per batch.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tokenizer/chat_template.h"

namespace pagoda::tokenizer::testing {

// One render: the template plus what ChatTemplateInputs carries.
struct Case {
  std::string name;
  std::string source;
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  nlohmann::ordered_json tools;  // null: none
  bool add_generation_prompt = true;
  std::string bos_token = "<s>";
  std::string eos_token = "</s>";
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  int64_t now = 1721995200;  // 2024-07-26 12:00 UTC, fed to strftime_now on both sides
  int timeout_seconds = 0;   // oracle render time limit (0: none)
};

struct OracleResult {
  bool ok = false;
  std::string output;
  std::string kind;  // syntax | raise | error | timeout (when !ok)
  std::string message;
  int line = 0;  // syntax errors: the line jinja2 reports
};

// nullopt (with a reason) when /usr/bin/python3 with jinja2 is not available.
std::optional<std::vector<OracleResult>> run_oracle(const std::vector<Case>& cases,
                                                    std::string* why_not);

// Renders a case with our implementation (parse errors are returned as the status).
Result<std::string> render_ours(const Case& c, ChatTemplateLimits limits = {});

// Empty when ours agrees with the oracle: same output, or both fail (same message for
// raise_exception; a parse error naming the same line for a syntax error). Otherwise a
// description.
std::string compare(const Case& c, const OracleResult& expected, const Result<std::string>& ours);

}  // namespace pagoda::tokenizer::testing
