// Differential test against an independent validator: python3-jsonschema (Draft 2020-12, formats
// asserted) decides every candidate instance of differential_cases.json (the given instances and
// their mutations, made by jsonschema_oracle.py); the grammar must accept a candidate's compact
// text exactly when jsonschema says it is valid, and its pretty-printed text too when it is.
// "subset_only" instances document deliberate narrowing: jsonschema accepts them, the grammar
// does not (keys out of schema order, 5.0 for an integer, a leap second, lenient emails).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "structured/json_schema.h"
#include "structured/recognizer.h"
#include "test_support.h"

namespace pagoda::structured {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(JsonSchemaDifferential, AgreesWithPythonJsonschema) {
  const fs::path dir = pagoda::testing::source_dir() / "tests/unit/structured/json_schema";
  const fs::path cases_path = dir / "differential_cases.json";
  const fs::path out = fs::temp_directory_path() /
                       ("pagoda_jsonschema_oracle_" + std::to_string(::getpid()) + ".json");
  ASSERT_TRUE(fs::exists("/usr/bin/python3")) << "/usr/bin/python3 is missing";
  const std::string cmd = "/usr/bin/python3 '" + (dir / "jsonschema_oracle.py").string() + "' '" +
                          cases_path.string() + "' > '" + out.string() + "'";
  const int rc = std::system(cmd.c_str());
  ASSERT_EQ(rc, 0) << "the oracle failed (exit " << rc
                   << "); python3-jsonschema missing? run scripts/install-deps.sh test";
  const auto verdicts = nlohmann::json::parse(read_file(out));
  fs::remove(out);
  const auto cases = nlohmann::ordered_json::parse(read_file(cases_path));

  JsonSchemaOptions options;
  options.default_additional_properties = true;  // JSON Schema's own default
  std::vector<Grammar> grammars;
  for (const auto& c : cases) {
    Result<Grammar> g = compile_json_schema(c["schema"].dump(), options);
    ASSERT_TRUE(g.ok()) << c["schema"].dump() << ": " << g.status().to_string();
    grammars.push_back(std::move(*g));
  }
  size_t num_valid = 0, num_invalid = 0, num_subset = 0, num_mismatches = 0;
  for (const auto& v : verdicts) {
    const size_t i = v["case"].get<size_t>();
    const std::string compact = v["compact"].get<std::string>();
    const bool valid = v["valid"].get<bool>();
    Result<bool> got = grammar_accepts(grammars[i], compact);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const std::string where =
        "case " + std::to_string(i) + " " + cases[i]["schema"].dump() + "\n  instance " + compact;
    if (v["kind"] == "subset_only") {
      ++num_subset;
      EXPECT_TRUE(valid) << where << ": jsonschema should accept it";
      EXPECT_FALSE(*got) << where << ": documented as outside the grammar";
      continue;
    }
    valid ? ++num_valid : ++num_invalid;
    if (*got != valid) {
      ++num_mismatches;
      ADD_FAILURE() << where << "\n  jsonschema: " << (valid ? "valid" : "invalid")
                    << ", grammar: " << (*got ? "accepts" : "rejects");
      if (num_mismatches > 30) break;
      continue;
    }
    if (valid) {
      const std::string pretty = v["pretty"].get<std::string>();
      Result<bool> pretty_ok = grammar_accepts(grammars[i], pretty);
      ASSERT_TRUE(pretty_ok.ok());
      EXPECT_TRUE(*pretty_ok) << where << "\n  pretty:\n" << pretty;
    }
  }
  EXPECT_GT(num_valid, 300u);
  EXPECT_GT(num_invalid, 1000u);
  EXPECT_GE(num_subset, 5u);
  std::printf("differential: %zu valid, %zu invalid, %zu subset-only candidates over %zu schemas\n",
              num_valid, num_invalid, num_subset, cases.size());
}

}  // namespace
}  // namespace pagoda::structured
