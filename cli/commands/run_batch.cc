// pagoda run-batch: OpenAI's batch file format offline. Each input line is
// {"custom_id", "method": "POST", "url": "/v1/chat/completions" | "/v1/completions" |
// "/v1/embeddings" | "/v1/rerank" | "/v1/score", "body"};
// each output line is {"id", "custom_id", "response": {"status_code", "request_id", "body"} |
// null, "error": null | {"code", "message"}}. Requests run concurrently through pagoda::Engine,
// parsed and answered by the server's own code (parse_generation_request /
// run_offline_completion; the pooling parsers / run_offline_pooling), so a line's body is exactly
// what POSTing it would return. Resumable: custom_ids already in the output file are skipped (a
// torn last line, from a kill, is cut off); a bad line gets an error line and the run goes on.

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "cli/progress.h"
#include "pagoda/engine.h"
#include "server/batch_file.h"
#include "server/offline_completion.h"
#include "server/offline_pooling.h"
#include "server/openai_request.h"
#include "server/server_config.h"

namespace pagoda::cli {
namespace {

using nlohmann::json;

struct BatchOpts {
  std::string input, output, model;
  EngineConfig engine;
  int32_t max_concurrency = 0;  // 0: 2 x max_num_seqs
  server::ServerConfig server;
};

// The custom_ids already answered in `path`; cuts a torn last line (no newline) off the file.
Result<std::unordered_set<std::string>> read_done(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::unordered_set<std::string>();
  std::string text;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return invalid_argument("cannot read the output file {}", path);
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  size_t complete = 0;
  std::unordered_set<std::string> done = server::batch_done_ids(text, complete);
  if (complete != text.size()) {
    std::filesystem::resize_file(path, complete, ec);
    if (ec) return invalid_argument("cannot truncate the torn last line of {}", path);
  }
  return done;
}

// Output lines, written by the main thread as results arrive (from the engine thread).
class ResultQueue {
 public:
  void push(std::string line) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(std::move(line));
    }
    cv_.notify_one();
  }
  // Waits for at least one line; returns them all.
  std::deque<std::string> take() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !lines_.empty(); });
    return std::exchange(lines_, {});
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> lines_;
};

int run_batch(BatchOpts o) {
  EngineConfig& ec = o.engine;
  ec.model_path = o.model.empty() ? default_model_path() : o.model;
  if (ec.model_path.empty()) return fail("no model given (-m) and no bundled model found");
  std::ifstream in(o.input, std::ios::binary);
  if (!in) return fail("cannot read the input file " + o.input);
  auto done = read_done(o.output);
  if (!done.ok()) return fail(done.status().message());
  std::ofstream out(o.output, std::ios::binary | std::ios::app);
  if (!out) return fail("cannot write the output file " + o.output);

  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
  }
  auto engine_or = Engine::create(ec);
  if (!engine_or.ok()) return fail(engine_or.status().message());
  Engine& engine = **engine_or;

  const int32_t limit = o.max_concurrency > 0 ? o.max_concurrency : 2 * ec.max_num_seqs;
  ResultQueue results;
  size_t in_flight = 0, finished = 0, skipped = 0, errors = 0;
  ProgressBar bar("run-batch", "lines");
  const auto write = [&](const std::deque<std::string>& ls) {
    for (const std::string& l : ls) {
      out << l << '\n';
      ++finished;
    }
    out.flush();  // a line is either whole in the file or absent (resume relies on it)
    bar.update_count(finished + skipped, lines.size(), fmt::format("({} errors)", errors));
  };
  std::unordered_set<std::string> seen;
  for (size_t i = 0; i < lines.size(); ++i) {
    server::BatchLine b = server::parse_batch_line(lines[i], i + 1);
    if (!b.custom_id.empty() && done->count(b.custom_id) != 0) {
      ++skipped;
      continue;
    }
    if (!b.custom_id.empty() && !seen.insert(b.custom_id).second) {
      ++errors;
      write({server::batch_error_line(
          b.custom_id, "duplicate_custom_id",
          fmt::format("line {}: custom_id is used by an earlier line", i + 1))});
      continue;
    }
    if (!b.error_code.empty()) {
      ++errors;
      write({server::batch_error_line(b.custom_id, b.error_code, b.error_message)});
      continue;
    }
    server::GenerationSpec spec;
    server::PoolingWork work;
    std::optional<server::ApiError> e;
    if (b.url == server::BatchUrl::kEmbeddings) {
      server::EmbeddingsSpec es;
      e = server::parse_embeddings_request(b.body, engine, o.server, es);
      if (!e) work = server::embeddings_work(std::move(es));
    } else if (b.url != server::BatchUrl::kGeneration) {
      const bool score = b.url == server::BatchUrl::kScore;
      server::RerankSpec rs;
      e = score ? server::parse_score_request(b.body, engine, o.server, rs)
                : server::parse_rerank_request(b.body, engine, o.server, rs);
      if (!e) work = server::rerank_work(std::move(rs), score);
    } else {
      e = server::parse_generation_request(b.body, b.endpoint, engine, o.server, spec);
    }
    if (e) {
      // The answer the server would give: a 4xx response line, as OpenAI's batch does.
      write({server::batch_response_line(b.custom_id,
                                         server::OfflineResult{e->status, "", e->body()})});
      continue;
    }
    while (in_flight >= static_cast<size_t>(limit)) {
      const std::deque<std::string> ls = results.take();
      in_flight -= ls.size();
      write(ls);
    }
    ++in_flight;
    auto on_done = [&results, id = b.custom_id](server::OfflineResult r) {
      results.push(server::batch_response_line(id, r));
    };
    if (b.url == server::BatchUrl::kGeneration) {
      server::run_offline_completion(std::move(spec), engine, std::move(on_done));
    } else {
      server::run_offline_pooling(std::move(work), engine, std::move(on_done));
    }
  }
  while (in_flight > 0) {
    const std::deque<std::string> ls = results.take();
    in_flight -= ls.size();
    write(ls);
  }
  bar.update_count(finished + skipped, lines.size(), fmt::format("({} errors)", errors),
                   /*force=*/true);
  bar.finish();
  engine.shutdown();
  spdlog::info("run-batch: {} written ({} errors), {} already in {}", finished, errors, skipped,
               o.output);
  return 0;
}

}  // namespace

void register_run_batch(CLI::App& app, CommandAction& action) {
  auto o = std::make_shared<BatchOpts>();
  CLI::App* cmd = app.add_subcommand(
      "run-batch", "Run an OpenAI batch file (JSONL) offline; resumable (done ids are skipped)");
  cmd->add_option("-i,--input", o->input, "Input JSONL (custom_id, method, url, body)")->required();
  cmd->add_option("-o,--output", o->output, "Output JSONL (appended; its ids are skipped)")
      ->required();
  cmd->add_option("-m,--model", o->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("--served-model-name", o->engine.served_model_name,
                  "The model name bodies may give (default: the file's stem)");
  cmd->add_option("--max-concurrency", o->max_concurrency,
                  "Requests in flight (default: 2 x --max-num-seqs)")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--max-num-seqs", o->engine.max_num_seqs, "Running sequences per step")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--max-num-batched-tokens", o->engine.max_num_batched_tokens,
                  "Tokens computed per step")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("-t,--threads", o->engine.num_threads, "Compute threads (0: all cores)")
      ->check(CLI::Range(0, 4096));
  cmd->callback([o, &action] { action = [o] { return run_batch(*o); }; });
}

}  // namespace pagoda::cli
