// pagoda chat: an interactive conversation using the model's chat template. Reads one user
// message per line from stdin ("/exit" or EOF ends), streams each reply.
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <cstdio>
#include <iostream>

#include "cli/commands/commands.h"
#include "cli/generate.h"
#include "tokenizer/chat_template.h"

namespace pagoda::cli {

void register_chat(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model, system;
    int32_t n_predict = 256;
    int64_t seed = -1;
    SamplingParams params;
  };
  auto opts = std::make_shared<Opts>();
  opts->params.temperature = 0.8f;
  opts->params.top_k = 40;
  opts->params.top_p = 0.95f;
  opts->params.min_p = 0.05f;
  CLI::App* cmd = app.add_subcommand("chat", "Chat interactively using the model's template");
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_option("-s,--system", opts->system, "System message");
  cmd->add_option("-n,--n-predict", opts->n_predict, "Maximum tokens per reply")
      ->check(CLI::Range(1, 1 << 24));
  add_sampling_options(cmd, opts->params, opts->seed);
  cmd->callback([opts, &action] {
    action = [opts] {
      std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      auto loaded = loader::load_model(path);
      if (!loaded.ok()) return fail(loaded.status().message());
      if (loaded->chat_template.empty()) return fail(path + " has no chat template");
      auto tmpl = tokenizer::ChatTemplate::parse(loaded->chat_template);
      if (!tmpl.ok()) return fail("chat template: " + tmpl.status().message());
      if (opts->seed >= 0) opts->params.seed = static_cast<uint64_t>(opts->seed);
      auto session =
          runner::SequenceSession::create(*loaded->model, loaded->model->config().context_length);
      if (!session.ok()) return fail(session.status().message());

      const auto& vocab = loaded->tokenizer->vocab();
      const std::string bos =
          vocab.bos_id ? loaded->tokenizer->token_to_piece(*vocab.bos_id, true) : "";
      const std::string eos =
          vocab.eos_id ? loaded->tokenizer->token_to_piece(*vocab.eos_id, true) : "";
      nlohmann::ordered_json messages = nlohmann::ordered_json::array();
      if (!opts->system.empty())
        messages.push_back({{"role", "system"}, {"content", opts->system}});
      std::vector<int32_t> fed;  // tokens the session holds
      const bool interactive = isatty(STDIN_FILENO);
      std::string line;
      while (true) {
        if (interactive) {
          std::fputs("> ", stdout);
          std::fflush(stdout);
        }
        if (!std::getline(std::cin, line) || line == "/exit") break;
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        tokenizer::ChatTemplateInputs in;
        in.messages = &messages;
        in.add_generation_prompt = true;
        in.bos_token = bos;
        in.eos_token = eos;
        auto rendered = (*tmpl)->render(in);
        if (!rendered.ok()) return fail("chat template: " + rendered.status().message());
        tokenizer::EncodeOptions enc;
        enc.add_special = bos.empty() || rendered->rfind(bos, 0) != 0;
        enc.parse_special = true;
        std::vector<int32_t> all = loaded->tokenizer->encode(*rendered, enc);
        // Reuse the KV of the common prefix with what was computed before.
        size_t common = 0;
        while (common < fed.size() && common < all.size() && fed[common] == all[common])
          ++common;
        if (common == all.size() && common > 0) --common;  // always compute the last token
        session->rewind(static_cast<int32_t>(common));
        fed.resize(common);
        std::vector<int32_t> input(all.begin() + static_cast<std::ptrdiff_t>(common), all.end());
        std::string reply;
        auto result = generate(*loaded, *session, input, opts->params, opts->n_predict,
                               [&reply](const std::string& text) {
                                 reply += text;
                                 std::fwrite(text.data(), 1, text.size(), stdout);
                                 std::fflush(stdout);
                               });
        std::fputc('\n', stdout);
        if (!result.ok()) return fail(result.status().message());
        // The session holds the input and the sampled tokens it has fed back (all but a final
        // one that hit the length limit).
        fed.insert(fed.end(), input.begin(), input.end());
        const size_t generated_fed = static_cast<size_t>(session->num_tokens()) - fed.size();
        fed.insert(fed.end(), result->tokens.begin(),
                   result->tokens.begin() + static_cast<std::ptrdiff_t>(generated_fed));
        messages.push_back({{"role", "assistant"}, {"content", reply}});
      }
      return 0;
    };
  });
}

}  // namespace pagoda::cli
