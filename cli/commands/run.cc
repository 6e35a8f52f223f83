// pagoda run: generate a continuation of a prompt and stream it to stdout, through the same
// pagoda::Engine `serve` runs (one sequence, a KV cache sized for the prompt and -n tokens).
#include <algorithm>
#include <cstdio>

#include "cli/commands/commands.h"
#include "cli/sampling_options.h"
#include "cli/stream_request.h"
#include "pagoda/engine.h"

namespace pagoda::cli {

void register_run(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model, prompt, kv_cache_dtype = "f32";
    int32_t n_predict = 128;
    int64_t seed = -1;
    bool flash_attn = false;
    SpeculativeConfig speculative;
    SamplingParams params = default_cli_sampling();
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt");
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-p,--prompt", opts->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", opts->n_predict, "Tokens to generate")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "KV cache type: f32 | f16 | bf16 | q8_0");
  add_flash_attn_flag(cmd, opts->flash_attn);
  add_speculative_options(cmd, opts->speculative);
  add_sampling_options(cmd, opts->params, opts->seed);
  cmd->callback([opts, &action] {
    action = [opts] {
      std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      EngineConfig config;
      config.model_path = path;
      config.kv_cache_dtype = opts->kv_cache_dtype;
      config.flash_attention = opts->flash_attn;
      config.speculative = opts->speculative;
      config.max_num_seqs = 1;
      config.warm_up = false;  // one request: nothing to keep one-time costs away from
      // The KV cache holds the prompt and the generated tokens: a prompt of b bytes has at most
      // b + 4 tokens (every token but the added BOS/EOS and a leading space covers a byte), and
      // the model's context length caps it (set once the model is loaded).
      const int64_t bound = static_cast<int64_t>(opts->prompt.size()) + 4 + opts->n_predict;
      config.max_model_len = static_cast<int32_t>(std::min<int64_t>(bound, INT32_MAX));
      config.clamp_max_model_len = true;
      auto engine = Engine::create(config);
      if (!engine.ok()) return fail(engine.status().message());
      if (opts->seed >= 0) opts->params.seed = static_cast<uint64_t>(opts->seed);

      GenerateRequest request;
      request.request_id = "run";
      request.prompt_tokens = (*engine)->tokenize(opts->prompt, /*add_special=*/true,
                                                  /*parse_special=*/true);
      request.sampling = opts->params;
      const int64_t room = (*engine)->model_info().context_length -
                           static_cast<int64_t>(request.prompt_tokens.size());
      if (request.prompt_tokens.empty()) return fail("the prompt has no tokens");
      if (room < 1) {
        return fail(fmt::format("the prompt ({} tokens) does not fit the context ({})",
                                request.prompt_tokens.size(),
                                (*engine)->model_info().context_length));
      }
      // Like llama.cpp, generation stops at the end of the context.
      request.stop.max_tokens = static_cast<int32_t>(std::min<int64_t>(opts->n_predict, room));
      std::fwrite(opts->prompt.data(), 1, opts->prompt.size(), stdout);
      std::fflush(stdout);
      auto result = stream_request(**engine, std::move(request), [](const std::string& text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      });
      std::fputc('\n', stdout);
      if (!result.ok()) return fail(result.status().message());
      return 0;
    };
  });
}

}  // namespace pagoda::cli
