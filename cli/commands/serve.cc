// pagoda serve: the OpenAI-compatible HTTP server (server/). Flags split into engine flags
// (EngineConfig: KV cache, batching, threads) and server flags (ServerConfig: address, API key,
// admission, limits, timeouts). The listener starts before the model loads (/health says 503
// until it is ready); SIGTERM drains, a second SIGTERM exits at once. Several models (`-m A -m B`,
// `--models-dir`) load on first use within --max-loaded-models (server/model_registry.h); the
// engine flags apply to each, the KV budget is split equally over the models that may be loaded
// at once, --lora and --served-model-name belong to the first.
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "cli/commands/commands.h"
#include "cli/lora_options.h"
#include "cli/serve_models.h"
#include "pagoda/engine.h"
#include "pagoda/output_parser.h"
#include "pagoda/parallel.h"
#include "server/http_server.h"
#include "server/server_config.h"

namespace pagoda::cli {
namespace {

struct ServeOpts {
  std::vector<std::string> models;  // -m, repeatable: PATH or NAME=PATH
  std::string models_dir;
  int32_t max_loaded_models = 0;  // 0: every model
  double idle_unload_s = 0;
  server::ServerConfig server;
  EngineConfig engine;
  LoraOptions lora;
  std::string kv_cache_memory;
  bool prefix_caching = true;
  double queue_timeout_s = 0;
  double drain_timeout_s = 30;
  double keep_alive_timeout_s = 30;
  double read_timeout_s = 60;
  double write_timeout_s = 30;
  std::string max_body = "16MiB";
  std::string max_header = "64KiB";
  std::string max_write_buffer = "4MiB";
  std::string log_level = "info";
  std::string tool_call_parser = "auto";
  std::string reasoning_parser = "none";
  std::string chat_template_file;
  std::string prefix_cache_isolation = "api-key";
  std::string pooling;  // /v1/embeddings: "" (the model's own) | last | mean | cls
};

// "a,b" -> {"a", "b"} (empty items dropped).
std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.pop_back();
    size_t lead = 0;
    while (lead < item.size() && std::isspace(static_cast<unsigned char>(item[lead])))
      ++lead;
    item.erase(0, lead);
    if (!item.empty()) out.push_back(std::move(item));
    start = end + 1;
  }
  return out;
}

// "2GiB", "512MiB", "1.5GB", "4096" -> bytes. 0 on error (ok = false).
uint64_t parse_size(const std::string& text, bool& ok) {
  ok = false;
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) {
    ++i;
  }
  if (i == 0) return 0;
  char* end = nullptr;
  const double value = std::strtod(text.substr(0, i).c_str(), &end);
  std::string unit = text.substr(i);
  for (char& c : unit)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "k" || unit == "kb")
    mult = 1e3;
  else if (unit == "m" || unit == "mb")
    mult = 1e6;
  else if (unit == "g" || unit == "gb")
    mult = 1e9;
  else if (unit == "t" || unit == "tb")
    mult = 1e12;
  else if (unit == "ki" || unit == "kib")
    mult = 1024.0;
  else if (unit == "mi" || unit == "mib")
    mult = 1024.0 * 1024;
  else if (unit == "gi" || unit == "gib")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "ti" || unit == "tib")
    mult = 1024.0 * 1024 * 1024 * 1024;
  if (mult == 0 || !std::isfinite(value) || value < 0 || value * mult > 1.8e19) return 0;
  ok = true;
  return static_cast<uint64_t>(value * mult);
}

std::vector<std::string> names_of(const std::vector<ServedModel>& models) {
  std::vector<std::string> out;
  for (const ServedModel& m : models)
    out.push_back(m.name);
  return out;
}

std::chrono::milliseconds seconds_to_ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(s * 1000.0)));
}

int run_serve(ServeOpts o) {
  auto level = spdlog::level::from_str(o.log_level);
  spdlog::set_level(level == spdlog::level::off && o.log_level != "off" ? spdlog::level::info
                                                                        : level);
  EngineConfig& ec = o.engine;
  if (o.models.empty() && o.models_dir.empty()) {
    const std::string bundled = default_model_path();
    if (bundled.empty()) return fail("no model given (-m) and no bundled model found");
    o.models.push_back(bundled);
  }
  // Paths are checked before the listener starts: a FIFO would block the loader's open forever
  // (and /health say "loading" forever).
  std::vector<ServedModel> served;
  if (const std::string err = resolve_served_models(o.models, o.models_dir, served); !err.empty()) {
    return fail(err);
  }
  ec.model_path = served.front().path;
  if (served.size() > 1 && !ec.served_model_name.empty()) {
    return fail("--served-model-name names a single model; with several, use -m NAME=PATH");
  }
  if (served.size() > 1 && (ec.tensor_parallel_size > 1 || ec.pipeline_parallel_size > 1)) {
    return fail("several models per server are not combined with tensor or pipeline parallelism");
  }
  if (o.max_loaded_models < 0) return fail("--max-loaded-models must be >= 0 (0: every model)");
  if (!std::isfinite(o.idle_unload_s) || o.idle_unload_s < 0 || o.idle_unload_s > 86400 * 365) {
    return fail("--idle-unload-seconds must be in [0, 31536000] (0: never)");
  }
  if (const std::string err = apply_lora_options(o.lora, ec); !err.empty()) return fail(err);
  if (!o.kv_cache_memory.empty()) {
    bool ok = false;
    ec.kv_cache_bytes = parse_size(o.kv_cache_memory, ok);
    if (!ok || ec.kv_cache_bytes == 0) {
      return fail("--kv-cache-memory: expected a size like 2GiB or 512MiB, got '" +
                  o.kv_cache_memory + "'");
    }
  }
  ec.enable_prefix_caching = o.prefix_caching;
  if (!o.chat_template_file.empty()) {
    std::ifstream in(o.chat_template_file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in || text.str().empty()) {
      return fail("--chat-template: cannot read '" + o.chat_template_file + "'");
    }
    ec.chat_template = text.str();
  }
  server::ServerConfig& sc = o.server;
  if (o.tool_call_parser != "auto") {
    sc.tool_call_format = tool_call_format_from_name(o.tool_call_parser);
    if (!sc.tool_call_format) {
      return fail("--tool-call-parser: expected auto, hermes, llama3_json, mistral or none, got '" +
                  o.tool_call_parser + "'");
    }
  }
  if (auto r = reasoning_format_from_name(o.reasoning_parser)) {
    sc.reasoning_format = *r;
  } else {
    return fail("--reasoning-parser: expected none, deepseek_r1 or qwen3, got '" +
                o.reasoning_parser + "'");
  }
  {
    bool ok = false;
    sc.max_body_bytes = parse_size(o.max_body, ok);
    if (!ok || sc.max_body_bytes == 0) {
      return fail("--max-body-size: expected a size like 16MiB, got '" + o.max_body + "'");
    }
  }
  {
    bool ok = false;
    const uint64_t h = parse_size(o.max_header, ok);
    if (!ok || h < 1024 || h > (64u << 20)) {
      return fail("--max-header-size: expected a size in [1KiB, 64MiB], got '" + o.max_header +
                  "'");
    }
    sc.max_header_bytes = static_cast<uint32_t>(h);
    sc.max_write_buffer_bytes = parse_size(o.max_write_buffer, ok);
    if (!ok || sc.max_write_buffer_bytes < 4096) {
      return fail("--max-write-buffer: expected a size >= 4KiB, got '" + o.max_write_buffer + "'");
    }
  }
  for (double t : {o.queue_timeout_s, o.drain_timeout_s, o.keep_alive_timeout_s, o.read_timeout_s,
                   o.write_timeout_s}) {
    if (!std::isfinite(t) || t < 0 || t > 86400) return fail("timeouts must be in [0, 86400] s");
  }
  sc.queue_timeout = seconds_to_ms(o.queue_timeout_s);
  sc.drain_timeout = seconds_to_ms(o.drain_timeout_s);
  sc.keep_alive_timeout = seconds_to_ms(o.keep_alive_timeout_s);
  sc.read_timeout = seconds_to_ms(o.read_timeout_s);
  sc.write_timeout = seconds_to_ms(o.write_timeout_s);
  // An empty key means none (as `--api-key ""` always did).
  std::erase_if(sc.api_keys, [](const std::string& k) { return k.empty(); });
  if (sc.api_keys.empty()) {
    if (const char* env = std::getenv("PAGODA_API_KEY"); env != nullptr) {
      sc.api_keys = split_list(env);
    }
  }
  if (o.prefix_cache_isolation == "none") {
    sc.prefix_cache_isolation = server::PrefixCacheIsolation::kNone;
  } else if (o.prefix_cache_isolation == "api-key") {
    sc.prefix_cache_isolation = server::PrefixCacheIsolation::kApiKey;
  } else if (o.prefix_cache_isolation == "salt") {
    sc.prefix_cache_isolation = server::PrefixCacheIsolation::kSalt;
  } else {
    return fail("--prefix-cache-isolation: expected none, api-key or salt, got '" +
                o.prefix_cache_isolation + "'");
  }
  if (o.pooling == "last") {
    sc.pooling = PoolingType::kLast;
  } else if (o.pooling == "mean") {
    sc.pooling = PoolingType::kMean;
  } else if (o.pooling == "cls") {
    sc.pooling = PoolingType::kCls;
  } else if (!o.pooling.empty()) {
    return fail("--pooling: expected last, mean or cls, got '" + o.pooling + "'");
  }
  for (std::vector<std::string>* list : {&sc.allowed_hosts, &sc.allowed_origins}) {
    std::vector<std::string> flat;
    for (const std::string& item : *list) {
      for (std::string& part : split_list(item))
        flat.push_back(std::move(part));
    }
    *list = std::move(flat);
  }
  ec.max_queue = std::max(ec.max_queue, 0);

  if (!ec.served_model_name.empty()) served.front().name = ec.served_model_name;
  if (auto worker = run_as_parallel_worker(ec)) return *worker;
  // The KV budget is shared out equally over the models that may be loaded at once (each
  // engine reserves its share when it loads and frees it when it unloads).
  const size_t slots = o.max_loaded_models > 0
                           ? std::min(served.size(), static_cast<size_t>(o.max_loaded_models))
                           : served.size();
  if (slots > 1) {
    if (ec.kv_cache_bytes > 0) {
      ec.kv_cache_bytes /= slots;
    } else {
      ec.kv_cache_fraction /= static_cast<double>(slots);
    }
  }
  std::vector<server::ModelSource> sources;
  std::set<std::string> names;
  for (const ServedModel& m : served)
    names.insert(m.name);
  for (size_t i = 0; i < served.size(); ++i) {
    EngineConfig mc = ec;
    mc.model_path = served[i].path;
    mc.served_model_name = served[i].name;
    server::ModelSource src;
    src.name = served[i].name;
    if (i > 0) mc.lora_adapters.clear();  // --lora adapts the first model
    for (const LoraAdapterSpec& l : mc.lora_adapters) {
      if (!names.insert(l.name).second) {
        return fail("--lora " + l.name + ": a model has that name");
      }
      src.lora_names.push_back(l.name);
    }
    src.factory = [mc] { return Engine::create(mc); };
    sources.push_back(std::move(src));
  }
  server::ModelRegistryOptions ro;
  ro.max_loaded_models = o.max_loaded_models;
  ro.idle_unload = seconds_to_ms(o.idle_unload_s);
  if (served.size() > 1) {
    spdlog::info("{} models (load on first use, at most {} loaded, KV budget split {} ways): {}",
                 served.size(), o.max_loaded_models > 0 ? o.max_loaded_models : served.size(),
                 slots, fmt::join(names_of(served), ", "));
  }
  // Rank 0 of a job: mpirun's SIGTERM means a rank died; fail fast instead of draining.
  if (parallel_size() > 1) sc.signal_exit_code = 1;
  server::HttpServer srv(sc, std::move(sources), std::move(ro), /*preload=*/served.size() == 1);
  srv.handle_signals();
  if (Status st = srv.start(); !st.ok()) return fail(st.message());
  return srv.wait();
}

}  // namespace

void register_serve(CLI::App& app, CommandAction& action) {
  auto opts = std::make_shared<ServeOpts>();
  ServeOpts& o = *opts;
  CLI::App* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API");
  cmd->add_option("-m,--model", o.models,
                  "GGUF file or HF directory, or NAME=PATH; repeat to serve several models "
                  "(default: the demo model)");
  cmd->add_option("--models-dir", o.models_dir,
                  "Serve every *.gguf file and HF model directory in DIR, named after its stem");
  cmd->add_option("--max-loaded-models", o.max_loaded_models,
                  "Models loaded at once; loading one more first unloads the least recently "
                  "used idle one (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--idle-unload-seconds", o.idle_unload_s,
                  "Unload a model (weights and KV cache) after this many seconds without "
                  "requests (0: never)")
      ->capture_default_str();
  cmd->add_option("--host", o.server.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o.server.port, "Port (0: any free port)")->capture_default_str();
  cmd->add_option("--served-model-name", o.engine.served_model_name,
                  "Model id in the API (default: the file's stem)");
  add_lora_options(cmd, o.lora);
  cmd->add_option("--api-key", o.server.api_keys,
                  "Require 'Authorization: Bearer KEY'; repeat for several keys (default: "
                  "$PAGODA_API_KEY, comma-separated)");
  cmd->add_option("--allowed-hosts", o.server.allowed_hosts,
                  "Host header values answered, comma-separated; '*' = any (default: localhost "
                  "names, loopback IPs, the bound address; any IP literal on a wildcard bind)");
  cmd->add_option("--allowed-origins", o.server.allowed_origins,
                  "Browser origins allowed cross-origin (CORS), comma-separated, e.g. "
                  "http://localhost:3000; '*' = any (default: none, same-origin only)");
  cmd->add_option("--prefix-cache-isolation", o.prefix_cache_isolation,
                  "Who may share cached prompt prefixes: none (everyone) | api-key (requests "
                  "with the same key) | salt (requests with the same cache_salt)")
      ->capture_default_str();
  // Engine.
  cmd->add_option("--kv-cache-memory", o.kv_cache_memory,
                  "KV cache size, e.g. 2GiB (default: a quarter of available RAM)");
  cmd->add_option("--kv-cache-dtype", o.engine.kv_cache_dtype, "f16 | bf16 | q8_0 | f32")
      ->capture_default_str();
  add_flash_attn_flag(cmd, o.engine.flash_attention);
  add_speculative_options(cmd, o.engine.speculative);
  cmd->add_option("--block-size", o.engine.block_size, "Tokens per KV block")
      ->capture_default_str();
  cmd->add_option("--max-num-seqs", o.engine.max_num_seqs, "Running sequences per step")
      ->capture_default_str();
  cmd->add_option("--max-num-batched-tokens", o.engine.max_num_batched_tokens,
                  "Tokens computed per step")
      ->capture_default_str();
  cmd->add_option("--max-model-len", o.engine.max_model_len,
                  "Context length (default: the model's)");
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", o.prefix_caching,
                "Reuse the KV of shared prompt prefixes")
      ->capture_default_str();
  cmd->add_flag("!--no-warmup", o.engine.warm_up,
                "Skip the warm-up forward pass at startup (the first requests pay its costs)");
  cmd->add_option("--scheduling-policy", o.engine.scheduling_policy, "fcfs | priority")
      ->capture_default_str();
  add_tensor_parallel_option(cmd, o.engine.tensor_parallel_size);
  add_pipeline_parallel_option(cmd, o.engine.pipeline_parallel_size);
  add_expert_parallel_flag(cmd, o.engine.expert_parallel);
  cmd->add_option("-t,--threads", o.engine.num_threads, "Compute threads (0: all cores)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->capture_default_str();
  // Admission and lifecycle.
  cmd->add_option("--max-queue", o.engine.max_queue,
                  "Waiting requests before 429 Too Many Requests")
      ->capture_default_str();
  cmd->add_option("--queue-timeout", o.queue_timeout_s,
                  "Seconds a request may wait for its first token before 429 (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", o.drain_timeout_s,
                  "Seconds running requests get to finish after SIGTERM")
      ->capture_default_str();
  // HTTP limits.
  cmd->add_option("--io-threads", o.server.io_threads, "HTTP threads")->capture_default_str();
  cmd->add_option("--max-connections", o.server.max_connections, "Open connections (503 beyond)")
      ->capture_default_str();
  cmd->add_option("--max-body-size", o.max_body, "Request body limit (413 beyond)")
      ->capture_default_str();
  cmd->add_option("--max-header-size", o.max_header, "Request header limit (431 beyond)")
      ->capture_default_str();
  cmd->add_option("--max-uri-size", o.server.max_uri_bytes, "Request target limit (414 beyond)")
      ->capture_default_str();
  cmd->add_option("--max-write-buffer", o.max_write_buffer,
                  "Output queued for a slow client before its request is aborted")
      ->capture_default_str();
  cmd->add_option("--keep-alive-timeout", o.keep_alive_timeout_s,
                  "Seconds an idle connection may take to send the next request header")
      ->capture_default_str();
  cmd->add_option("--read-timeout", o.read_timeout_s, "Seconds to receive a request body")
      ->capture_default_str();
  cmd->add_option("--write-timeout", o.write_timeout_s,
                  "Seconds one write may stall before the client is cut off")
      ->capture_default_str();
  cmd->add_option("--max-n", o.server.max_n, "Largest n per request")->capture_default_str();
  cmd->add_option("--max-logprobs", o.server.max_logprobs, "Largest top_logprobs / logprobs")
      ->capture_default_str();
  cmd->add_option("--log-level", o.log_level, "trace | debug | info | warn | error")
      ->capture_default_str();
  cmd->add_option("--chat-template", o.chat_template_file,
                  "A Jinja chat template file used instead of the model's");
  cmd->add_option("--tool-call-parser", o.tool_call_parser,
                  "Tool-call format of the model's output: auto (from the chat template) | hermes "
                  "| llama3_json | mistral | none")
      ->capture_default_str();
  cmd->add_option("--reasoning-parser", o.reasoning_parser,
                  "Split <think>...</think> into reasoning_content: none | deepseek_r1 | qwen3")
      ->capture_default_str();
  cmd->add_option("--pooling", o.pooling,
                  "/v1/embeddings: pool the final hidden states (after the final norm, "
                  "L2-normalised) at the last token | mean over the tokens | cls (position 0); "
                  "default: the model's own (encoders), none for decoders");
  cmd->callback([&action, opts] { action = [opts] { return run_serve(*opts); }; });
}

}  // namespace pagoda::cli
