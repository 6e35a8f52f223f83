// pagoda chat: an interactive conversation using the model's chat template, through the same
// pagoda::Engine `serve` runs. Reads one user message per line from stdin ("/exit" or EOF
// ends), streams each reply. Every turn sends the whole conversation; the prefix cache holds
// the earlier turns' KV, so only the new tokens are computed.
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cstdio>
#include <iostream>

#include "cli/commands/commands.h"
#include "cli/sampling_options.h"
#include "cli/stream_request.h"
#include "pagoda/engine.h"

namespace pagoda::cli {

void register_chat(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model, system, kv_cache_dtype = "f32";
    int32_t n_predict = 256;
    int64_t seed = -1;
    bool flash_attn = false;
    SamplingParams params = default_cli_sampling();
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("chat", "Chat interactively using the model's template");
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-s,--system", opts->system, "System message");
  cmd->add_option("-n,--n-predict", opts->n_predict, "Maximum tokens per reply")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--kv-cache-dtype", opts->kv_cache_dtype,
                  "KV cache type: f32 | f16 | bf16 | q8_0");
  add_flash_attn_flag(cmd, opts->flash_attn);
  add_sampling_options(cmd, opts->params, opts->seed);
  cmd->callback([opts, &action] {
    action = [opts] {
      std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      EngineConfig config;
      config.model_path = path;
      config.kv_cache_dtype = opts->kv_cache_dtype;
      config.flash_attention = opts->flash_attn;
      config.max_num_seqs = 1;  // one conversation, as long as the model's context
      config.warm_up = false;
      auto engine = Engine::create(config);
      if (!engine.ok()) return fail(engine.status().message());
      const ModelInfo& info = (*engine)->model_info();
      if (info.chat_template.empty()) return fail(path + " has no chat template");
      if (opts->seed >= 0) opts->params.seed = static_cast<uint64_t>(opts->seed);

      nlohmann::ordered_json messages = nlohmann::ordered_json::array();
      if (!opts->system.empty())
        messages.push_back({{"role", "system"}, {"content", opts->system}});
      const bool interactive = isatty(STDIN_FILENO);
      std::string line;
      for (int turn = 0;; ++turn) {
        if (interactive) {
          std::fputs("> ", stdout);
          std::fflush(stdout);
        }
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        auto rendered = (*engine)->apply_chat_template(messages.dump(), "", true);
        if (!rendered.ok()) return fail("chat template: " + rendered.status().message());
        GenerateRequest request;
        request.request_id = "turn-" + std::to_string(turn);
        // The template writes BOS itself when it has one; the tokenizer adds it otherwise.
        const bool has_bos = !info.bos_token.empty() && rendered->rfind(info.bos_token, 0) == 0;
        request.prompt_tokens = (*engine)->tokenize(*rendered, !has_bos, /*parse_special=*/true);
        request.sampling = opts->params;
        const int64_t room =
            info.context_length - static_cast<int64_t>(request.prompt_tokens.size());
        if (room < 1) return fail("the conversation no longer fits the model's context");
        request.stop.max_tokens = static_cast<int32_t>(std::min<int64_t>(opts->n_predict, room));
        std::string reply;
        auto result = stream_request(**engine, std::move(request), [&](const std::string& text) {
          reply += text;
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
        });
        std::fputc('\n', stdout);
        if (!result.ok()) return fail(result.status().message());
        messages.push_back({{"role", "assistant"}, {"content", reply}});
      }
      return 0;
    };
  });
}

}  // namespace pagoda::cli
