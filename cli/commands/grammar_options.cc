#include "cli/commands/grammar_options.h"

#include <fstream>
#include <sstream>

namespace pagoda::cli {
namespace {

Result<std::string> read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read {}", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

void add_constraint_options(CLI::App* cmd, ConstraintOptions& opts) {
  cmd->add_option("--json-schema", opts.json_schema_file, "JSON Schema file");
  cmd->add_flag("--json-object", opts.json_object, "Any JSON object");
  cmd->add_option("--regex", opts.regex, "Regular expression (full match)");
  cmd->add_option("--gbnf", opts.gbnf_file, "GBNF grammar file (llama.cpp syntax, rule root)");
  cmd->add_option("--choice", opts.choices, "One allowed output (repeat the flag)");
}

Result<StructuredOutputs> constraint_from_options(const ConstraintOptions& opts) {
  StructuredOutputs spec;
  int given = 0;
  if (!opts.json_schema_file.empty()) {
    ++given;
    spec.kind = StructuredOutputs::Kind::kJsonSchema;
    PAGODA_ASSIGN_OR_RETURN(spec.spec, read_text_file(opts.json_schema_file));
  }
  if (opts.json_object) {
    ++given;
    spec.kind = StructuredOutputs::Kind::kJsonObject;
  }
  if (!opts.regex.empty()) {
    ++given;
    spec.kind = StructuredOutputs::Kind::kRegex;
    spec.spec = opts.regex;
  }
  if (!opts.gbnf_file.empty()) {
    ++given;
    spec.kind = StructuredOutputs::Kind::kGrammar;
    PAGODA_ASSIGN_OR_RETURN(spec.spec, read_text_file(opts.gbnf_file));
  }
  if (!opts.choices.empty()) {
    ++given;
    spec.kind = StructuredOutputs::Kind::kChoice;
    spec.choices = opts.choices;
  }
  if (given != 1)
    return invalid_argument(
        "give exactly one of --json-schema, --json-object, --regex, --gbnf, --choice");
  return spec;
}

}  // namespace pagoda::cli
