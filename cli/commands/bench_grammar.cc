// pagoda bench grammar: the structured-output engine on its own (no model run), over a folder of
// JSON Schemas — the MaskBench format ({"schema": ..., "tests": [{"data", "valid"}]}) or bare
// schema files. Per schema: compile time (schema → grammar → compiled, cold); for each valid
// test instance, its tokens (compact serialisation, property order as written) are fed through
// the matcher as generation would, timing fill_mask per token; every invalid instance must be
// rejected (byte level). Prints compile ms and mask µs (mean/p50/p99, single thread), schemas
// compiled / refused, and the pass rate (compiled, every valid instance accepted and every
// invalid one rejected) over schemas with tests.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "loader/model_loader.h"
#include "structured/grammar_cache.h"
#include "structured/matcher.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {
namespace {

using Clock = std::chrono::steady_clock;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  return v[i];
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return v.empty() ? 0 : s / static_cast<double>(v.size());
}

struct Totals {
  int64_t files = 0, compiled = 0, refused = 0, with_tests = 0, passed = 0, unreadable = 0;
  int64_t valid_accepted = 0, valid_total = 0, invalid_rejected = 0, invalid_total = 0;
  std::vector<double> compile_ms, mask_us, first_mask_us;
  std::vector<std::string> refusal_samples;
};

void run_schema(const std::filesystem::path& file, const tokenizer::Tokenizer& tok,
                const std::shared_ptr<const structured::TokenTable>& table, Totals& t,
                bool verbose) {
  ++t.files;
  std::ifstream in(file, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(ss.str(), nullptr, false);
  if (doc.is_discarded()) {
    ++t.unreadable;
    return;
  }
  const bool maskbench = doc.is_object() && doc.contains("schema");
  const nlohmann::ordered_json schema = maskbench ? doc["schema"] : doc;
  StructuredOutputs spec;
  spec.kind = StructuredOutputs::Kind::kJsonSchema;
  spec.spec = schema.dump();
  const auto c0 = Clock::now();
  // A fresh cache per schema: compile times are cold.
  structured::GrammarCache cache(table, 1);
  auto compiled = cache.get(spec);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - c0).count();
  if (!compiled.ok()) {
    ++t.refused;
    if (t.refusal_samples.size() < 20)
      t.refusal_samples.push_back(file.filename().string() + ": " + compiled.status().message());
    if (maskbench && doc.contains("tests") && !doc["tests"].empty()) ++t.with_tests;
    return;
  }
  ++t.compiled;
  t.compile_ms.push_back(ms);
  if (!maskbench || !doc.contains("tests") || !doc["tests"].is_array() || doc["tests"].empty())
    return;
  ++t.with_tests;
  bool pass = true;
  std::vector<uint64_t> mask(table->num_mask_words());
  bool first_mask = true;  // the grammar's first mask builds its start state's token sets
  tokenizer::EncodeOptions enc;
  enc.add_special = false;
  enc.parse_special = false;
  for (const auto& test : doc["tests"]) {
    if (!test.contains("data") || !test.contains("valid")) continue;
    const std::string text =
        test["data"].dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    const bool valid = test["valid"].is_boolean() && test["valid"].get<bool>();
    structured::Matcher matcher(*compiled);
    bool accepted = true;
    if (valid) {
      ++t.valid_total;
      for (int32_t id : tok.encode(text, enc)) {
        const auto m0 = Clock::now();
        matcher.fill_mask(mask);
        const double us = std::chrono::duration<double, std::micro>(Clock::now() - m0).count();
        t.mask_us.push_back(us);
        if (first_mask) t.first_mask_us.push_back(us);
        first_mask = false;
        if (!structured::mask_allows(mask, id) || !matcher.accept_token(id).ok()) {
          accepted = false;
          break;
        }
      }
      accepted = accepted && matcher.can_end();
      if (accepted) ++t.valid_accepted;
      if (!accepted && verbose)
        std::fprintf(stderr, "valid instance refused: %s: %.200s\n", file.filename().c_str(),
                     text.c_str());
    } else {
      ++t.invalid_total;
      accepted = matcher.accept_bytes(text) && matcher.can_end();
      if (!accepted) ++t.invalid_rejected;
      if (accepted && verbose)
        std::fprintf(stderr, "invalid instance accepted: %s: %.200s\n", file.filename().c_str(),
                     text.c_str());
    }
    if (accepted != valid) pass = false;
  }
  if (pass) ++t.passed;
}

}  // namespace

void register_bench_grammar(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model, schemas;
    bool json = false, verbose = false;
    int64_t max_schemas = 0;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = bench_group(app)->add_subcommand(
      "grammar", "Structured output: compile time, mask time and correctness over JSON Schemas");
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (its vocabulary is used)");
  cmd->add_option("--schemas", opts->schemas, "Folder of schema files (MaskBench format or bare)")
      ->required();
  cmd->add_option("--max-schemas", opts->max_schemas, "Stop after this many files (0: all)");
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  cmd->add_flag("-v,--verbose", opts->verbose, "Report each failing instance on stderr");
  cmd->callback([opts, &action] {
    action = [opts] {
      const std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      auto tok = loader::load_tokenizer(path);
      if (!tok.ok()) return fail(tok.status().message());
      auto table = structured::TokenTable::create(**tok, (*tok)->num_tokens());
      std::vector<std::filesystem::path> files;
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(opts->schemas, ec)) {
        if (entry.is_regular_file() && entry.path().extension() == ".json")
          files.push_back(entry.path());
      }
      if (ec) return fail("cannot list " + opts->schemas + ": " + ec.message());
      std::sort(files.begin(), files.end());
      if (opts->max_schemas > 0 && files.size() > static_cast<size_t>(opts->max_schemas))
        files.resize(static_cast<size_t>(opts->max_schemas));
      Totals t;
      for (const auto& f : files)
        run_schema(f, **tok, table, t, opts->verbose);
      nlohmann::json out = {
          {"vocab_size", table->vocab_size()},
          {"files", t.files},
          {"unreadable", t.unreadable},
          {"compiled", t.compiled},
          {"refused", t.refused},
          {"compile_ms",
           {{"mean", mean(t.compile_ms)},
            {"p50", percentile(t.compile_ms, 0.5)},
            {"p99", percentile(t.compile_ms, 0.99)}}},
          {"mask_us",
           {{"count", t.mask_us.size()},
            {"mean", mean(t.mask_us)},
            {"p50", percentile(t.mask_us, 0.5)},
            {"p99", percentile(t.mask_us, 0.99)},
            {"max", percentile(t.mask_us, 1.0)}}},
          {"first_mask_us",
           {{"mean", mean(t.first_mask_us)},
            {"p50", percentile(t.first_mask_us, 0.5)},
            {"p99", percentile(t.first_mask_us, 0.99)}}},
          {"schemas_with_tests", t.with_tests},
          {"schemas_passed", t.passed},
          {"pass_rate",
           t.with_tests ? static_cast<double>(t.passed) / static_cast<double>(t.with_tests) : 0.0},
          {"valid_accepted", t.valid_accepted},
          {"valid_total", t.valid_total},
          {"invalid_rejected", t.invalid_rejected},
          {"invalid_total", t.invalid_total},
          {"refusal_samples", t.refusal_samples}};
      if (opts->json) {
        std::printf("%s\n", out.dump().c_str());
      } else {
        std::printf("%s\n", out.dump(2).c_str());
      }
      return 0;
    };
  });
}

}  // namespace pagoda::cli
