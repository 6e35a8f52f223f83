// pagoda tokenize: reads text from stdin and prints its token ids as a JSON array, tokenized
// exactly as the model's GGUF vocabulary (or a model directory's
// tokenizer.json) says (BOS/EOS per the vocab unless --no-bos).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include "cli/commands/commands.h"
#include "loader/model_loader.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {

void register_tokenize(CLI::App& app, CommandAction& action) {
  struct Opts {
    std::string model;
    bool no_bos = false;
    bool no_parse_special = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Print the token ids of stdin (all of it, newlines included) as a JSON array");
  cmd->add_option("-m,--model", opts->model, "GGUF file or HF directory (default: the demo model)");
  cmd->add_flag("--no-bos", opts->no_bos, "Do not add BOS/EOS even if the vocabulary asks");
  cmd->add_flag("--no-parse-special", opts->no_parse_special,
                "Treat control-token text like <|im_end|> as plain text");
  cmd->callback([opts, &action] {
    action = [opts] {
      const std::string path = opts->model.empty() ? default_model_path() : opts->model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      auto tok = loader::load_tokenizer(path);
      if (!tok.ok()) return fail(tok.status().message());

      std::string text((std::istreambuf_iterator<char>(std::cin)),
                       std::istreambuf_iterator<char>());
      if (std::cin.bad()) return fail("cannot read stdin");
      tokenizer::EncodeOptions enc;
      enc.add_special = !opts->no_bos;
      enc.parse_special = !opts->no_parse_special;
      const std::vector<tokenizer::TokenId> ids = (*tok)->encode(text, enc);
      std::string out = "[";
      for (size_t i = 0; i < ids.size(); ++i) {
        if (i > 0) out += ", ";
        out += std::to_string(ids[i]);
      }
      out += "]\n";
      std::fwrite(out.data(), 1, out.size(), stdout);
      return 0;
    };
  });
}

}  // namespace pagoda::cli
