// Oracle client: batches cases into one python3 run (see oracle_client.h).
#include "oracle_client.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.h"

namespace pagoda::tokenizer::testing {

namespace {

constexpr const char* kPython = "/usr/bin/python3";

nlohmann::ordered_json python_context(const Case& c) {
  // What transformers passes to template.render(): messages, tools, documents,
  // add_generation_prompt, then the special tokens and extra kwargs.
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = c.messages;
  ctx["tools"] = c.tools;
  ctx["documents"] = nullptr;
  ctx["add_generation_prompt"] = c.add_generation_prompt;
  ctx["bos_token"] = c.bos_token;
  ctx["eos_token"] = c.eos_token;
  for (const auto& [k, v] : c.extra.items())
    ctx[k] = v;
  return ctx;
}

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::optional<std::vector<OracleResult>> run_oracle(const std::vector<Case>& cases,
                                                    std::string* why_not) {
  namespace fs = std::filesystem;
  if (!fs::exists(kPython)) {
    *why_not = "no /usr/bin/python3";
    return std::nullopt;
  }
  if (std::system("/usr/bin/python3 -c 'import jinja2' >/dev/null 2>&1") != 0) {
    *why_not = "python3-jinja2 is not installed";
    return std::nullopt;
  }
  const fs::path script =
      pagoda::testing::source_dir() / "tests/unit/tokenizer/chat_template/oracle.py";
  const fs::path dir =
      fs::temp_directory_path() /
      ("pagoda_chat_oracle_" + std::to_string(::getpid()) + "_" +
       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  nlohmann::ordered_json in = nlohmann::ordered_json::array();
  for (const Case& c : cases) {
    in.push_back({{"template", c.source}, {"context", python_context(c)}, {"now", c.now}});
    if (c.timeout_seconds > 0) in.back()["timeout"] = c.timeout_seconds;
  }
  {
    std::ofstream f(dir / "in.json", std::ios::binary);
    f << in.dump();
  }
  // TZ=UTC on both sides: the oracle's datetime.fromtimestamp and our localtime agree.
  const std::string cmd = "TZ=UTC " + std::string(kPython) + " '" + script.string() + "' '" +
                          (dir / "in.json").string() + "' '" + (dir / "out.json").string() + "'";
  const int rc = std::system(cmd.c_str());
  std::vector<OracleResult> results;
  if (rc == 0) {
    const auto out = nlohmann::ordered_json::parse(read_file(dir / "out.json"));
    for (const auto& r : out) {
      OracleResult o;
      o.ok = r.at("ok").get<bool>();
      if (o.ok) {
        o.output = r.at("output").get<std::string>();
      } else {
        o.kind = r.at("kind").get<std::string>();
        o.message = r.at("message").get<std::string>();
        if (r.contains("line") && r.at("line").is_number()) o.line = r.at("line").get<int>();
      }
      results.push_back(std::move(o));
    }
  }
  fs::remove_all(dir);
  if (rc != 0) {
    *why_not = "oracle.py failed (exit " + std::to_string(rc) + ")";
    return std::nullopt;
  }
  return results;
}

Result<std::string> render_ours(const Case& c, ChatTemplateLimits limits) {
  // strftime_now renders local time; the oracle runs with TZ=UTC, so do we.
  static const bool utc = [] {
    ::setenv("TZ", "UTC", 1);
    ::tzset();
    return true;
  }();
  (void)utc;
  PAGODA_ASSIGN_OR_RETURN(auto t, ChatTemplate::parse(c.source, limits));
  ChatTemplateInputs inputs;
  inputs.messages = &c.messages;
  inputs.tools = c.tools.is_null() ? nullptr : &c.tools;
  inputs.add_generation_prompt = c.add_generation_prompt;
  inputs.bos_token = c.bos_token;
  inputs.eos_token = c.eos_token;
  inputs.extra_context = &c.extra;
  inputs.now = std::chrono::system_clock::time_point(std::chrono::seconds(c.now));
  return t->render(inputs);
}

std::string compare(const Case& c, const OracleResult& expected, const Result<std::string>& ours) {
  std::ostringstream why;
  if (expected.ok) {
    if (!ours.ok()) {
      why << c.name << ": jinja2 renders but we fail: " << ours.status().to_string()
          << "\n  expected: " << nlohmann::json(expected.output).dump();
    } else if (*ours != expected.output) {
      why << c.name << ": output differs\n  expected: " << nlohmann::json(expected.output).dump()
          << "\n  actual:   " << nlohmann::json(*ours).dump();
    }
    return why.str();
  }
  if (ours.ok()) {
    why << c.name << ": jinja2 fails (" << expected.kind << ": " << expected.message
        << ") but we render " << nlohmann::json(*ours).dump();
    return why.str();
  }
  const Status& s = ours.status();
  if (expected.kind == "error" && s.code() != StatusCode::kUnimplemented) {
    // Python's message after "ExceptionType: " must appear in ours.
    const size_t colon = expected.message.find(": ");
    std::string text =
        colon == std::string::npos ? expected.message : expected.message.substr(colon + 2);
    // Python names nested functions by qualname ("make_env.<locals>.tojson()"); compare
    // from the function name on.
    if (const size_t locals = text.find("<locals>."); locals != std::string::npos) {
      text = text.substr(locals + 9);
    }
    // Signature errors name Python's internal functions (sync_do_list()...): any argument
    // error of ours will do for those.
    const bool signature_error = (text.find("() takes ") != std::string::npos ||
                                  text.find("() missing ") != std::string::npos ||
                                  text.find("() got ") != std::string::npos) &&
                                 s.message().find("argument") != std::string::npos;
    if (!signature_error && s.message().find(text) == std::string::npos) {
      why << c.name << ": error message differs: jinja2 '" << expected.message << "', we "
          << s.to_string();
    }
  }
  if (expected.kind == "raise" &&
      (s.code() != StatusCode::kInvalidArgument || s.message() != expected.message)) {
    why << c.name << ": raise_exception message differs: expected '" << expected.message
        << "', got " << s.to_string();
  }
  if (expected.kind == "syntax" && s.code() != StatusCode::kUnimplemented) {
    const std::string where = "line " + std::to_string(expected.line) + ":";
    if (s.message().find("syntax error") == std::string::npos ||
        (expected.line > 0 && s.message().find(where) == std::string::npos)) {
      why << c.name << ": jinja2 reports a syntax error at line " << expected.line << " ("
          << expected.message << "), we give " << s.to_string();
    }
  }
  return why.str();
}

}  // namespace pagoda::tokenizer::testing
