// pagoda run: generate a continuation of a prompt and stream it to stdout.
#include <cstdio>

#include "api/kv_cache_sizing.h"
#include "cli/commands/commands.h"
#include "cli/generate.h"

namespace pagoda::cli {

void register_run(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model, prompt, kv_cache_dtype = "f32";
    int32_t n_predict = 128;
    int64_t seed = -1;
    bool flash_attn = false;
    SamplingParams params;
  };
  auto opts = std::make_shared<Opts>();
  // llama.cpp's defaults.
  opts->params.temperature = 0.8f;
  opts->params.top_k = 40;
  opts->params.top_p = 0.95f;
  opts->params.min_p = 0.05f;
  CLI::App* cmd = app.add_subcommand("run", "Generate text from a prompt");
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-p,--prompt", opts->prompt, "Prompt text")->required();
  cmd->add_option("-n,--n-predict", opts->n_predict, "Tokens to generate")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "KV cache type: f32 | f16 | bf16 | q8_0");
  add_flash_attn_flag(cmd, opts->flash_attn);
  add_sampling_options(cmd, opts->params, opts->seed);
  cmd->callback([opts, &action] {
    action = [opts] {
      std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      auto loaded = loader::load_model(path);
      if (!loaded.ok()) return fail(loaded.status().message());
      if (opts->seed >= 0) opts->params.seed = static_cast<uint64_t>(opts->seed);
      tokenizer::EncodeOptions enc;
      std::vector<int32_t> input = loaded->tokenizer->encode(opts->prompt, enc);
      const int32_t ctx = loaded->model->config().context_length;
      const int64_t want = static_cast<int64_t>(input.size()) + opts->n_predict;
      auto kv_dtype = api::parse_kv_cache_dtype(opts->kv_cache_dtype);
      if (!kv_dtype.ok()) return fail(kv_dtype.status().message());
      auto session = runner::SequenceSession::create(
          *loaded->model, static_cast<int32_t>(std::min<int64_t>(want, ctx)), *kv_dtype);
      if (!session.ok()) return fail(session.status().message());
      session->set_flash_attention(opts->flash_attn);
      std::fwrite(opts->prompt.data(), 1, opts->prompt.size(), stdout);
      std::fflush(stdout);
      auto result = generate(*loaded, *session, input, opts->params, opts->n_predict,
                             [](const std::string& text) {
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
