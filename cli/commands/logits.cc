// pagoda logits: the prompt's and greedy continuation's logit rows as JSON, shaped like the
// fidelity fixtures (../shared/fixtures/models/reference/*.json).
#include <nlohmann/json.hpp>

#include <cstdio>

#include "api/kv_cache_sizing.h"
#include "api/parallel_backend.h"
#include "cli/commands/commands.h"
#include "diagnostics/logit_trace.h"
#include "kernels/isa.h"
#include "loader/model_loader.h"
#include "pagoda/parallel.h"

namespace pagoda::cli {

void register_logits(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model, prompt, kv_cache_dtype = "f16";
    int32_t n_predict = 8, top = 64;
    bool flash_attn = false, expert_parallel = false;
    int32_t tensor_parallel_size = 1, pipeline_parallel_size = 1, threads = 0;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("logits", "Print prompt and greedy logits as JSON");
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-p,--prompt", opts->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", opts->n_predict, "Greedy tokens to generate")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--top", opts->top, "Top entries per position")->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "KV cache type: f16 | bf16 | q8_0 | f32");
  add_flash_attn_flag(cmd, opts->flash_attn);
  add_tensor_parallel_option(cmd, opts->tensor_parallel_size);
  add_pipeline_parallel_option(cmd, opts->pipeline_parallel_size);
  add_expert_parallel_flag(cmd, opts->expert_parallel);
  cmd->add_option("-t,--threads", opts->threads, "Compute threads (0: all cores)")
      ->check(CLI::Range(0, 4096));
  cmd->callback([opts, &action] {
    action = [opts] {
      std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      EngineConfig engine;
      engine.model_path = path;
      engine.tensor_parallel_size = opts->tensor_parallel_size;
      engine.pipeline_parallel_size = opts->pipeline_parallel_size;
      engine.expert_parallel = opts->expert_parallel;
      engine.num_threads = opts->threads;
      if (auto worker = run_as_parallel_worker(engine)) return *worker;
      if (Status s = check_parallel_sizes(opts->tensor_parallel_size, opts->pipeline_parallel_size);
          !s.ok()) {
        return fail(s.message());
      }
      if (opts->threads > 0) kernels::set_num_threads(opts->threads);
      auto loaded = loader::load_model(
          path, api::model_backend(opts->tensor_parallel_size, opts->pipeline_parallel_size,
                                   opts->expert_parallel));
      if (!loaded.ok()) return fail(loaded.status().message());
      auto kv_dtype = api::parse_kv_cache_dtype(opts->kv_cache_dtype);
      if (!kv_dtype.ok()) return fail(kv_dtype.status().message());
      auto trace = diagnostics::trace_logits(*loaded, opts->prompt, opts->n_predict, *kv_dtype,
                                             opts->flash_attn);
      if (!trace.ok()) return fail(trace.status().message());
      nlohmann::json out;
      out["model"] = path;
      out["prompt"] = opts->prompt;
      out["n_predict"] = opts->n_predict;
      out["top_k"] = opts->top;
      out["kv_cache_dtype"] = std::string(tensor::dtype_name(*kv_dtype));
      out["flash_attention"] = opts->flash_attn;
      out["n_vocab"] = loaded->model->config().vocab_size;
      out["prompt_tokens"] = trace->prompt_tokens;
      out["greedy_tokens"] = trace->greedy_tokens;
      std::vector<int> bytes;
      for (unsigned char ch : trace->greedy_text)
        bytes.push_back(ch);
      out["greedy_text_bytes"] = bytes;
      nlohmann::json positions = nlohmann::json::array();
      for (const auto& row : trace->rows) {
        diagnostics::RowStats s = diagnostics::row_stats(row, opts->top);
        nlohmann::json top = nlohmann::json::array();
        for (const auto& [id, logit] : s.top)
          top.push_back({id, logit});
        positions.push_back(
            {{"logsumexp", s.logsumexp}, {"mean", s.mean}, {"std", s.std}, {"top", top}});
      }
      out["positions"] = std::move(positions);
      std::string text = out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
      return 0;
    };
  });
}

}  // namespace pagoda::cli
