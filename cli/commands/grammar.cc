// pagoda grammar check: is a text what a constraint allows? Reads the candidate text on stdin,
// tokenizes it with the model's tokenizer and runs it through the token matcher as generation
// would: every token must be in the mask at its step and the grammar must be able to end after
// the last. Prints {"accepted": true|false, "error": ...} (the error names the first refused
// token and the text before it). Exit 0 with a verdict, 1 when the constraint itself is refused.
#include <iostream>
#include <iterator>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands/commands.h"
#include "cli/commands/grammar_options.h"
#include "loader/model_loader.h"
#include "structured/grammar_cache.h"
#include "structured/matcher.h"
#include "tokenizer/tokenizer.h"

namespace pagoda::cli {

void register_grammar(CLI::App& app, CommandAction& action) {
  CLI::App* group = app.add_subcommand("grammar", "Structured-output tools (grammar check)");
  group->require_subcommand(1);
  auto opts = std::make_shared<ConstraintOptions>();
  auto model = std::make_shared<std::string>();
  CLI::App* cmd = group->add_subcommand(
      "check", "Read text on stdin; print whether the constraint allows it as generated tokens");
  cmd->add_option("-m,--model", *model, "GGUF file or HF directory (default: the demo model)");
  add_constraint_options(cmd, *opts);
  cmd->callback([opts, model, &action] {
    action = [opts, model] {
      const std::string path = model->empty() ? default_model_path() : *model;
      if (path.empty()) return fail("no model given (-m) and no bundled model found");
      auto spec = constraint_from_options(*opts);
      if (!spec.ok()) return fail(spec.status().message());
      auto tok = loader::load_tokenizer(path);
      if (!tok.ok()) return fail(tok.status().message());
      structured::GrammarCache cache(structured::TokenTable::create(**tok, (*tok)->num_tokens()));
      auto grammar = cache.get(*spec);
      if (!grammar.ok()) return fail(grammar.status().message());

      const std::string text((std::istreambuf_iterator<char>(std::cin)),
                             std::istreambuf_iterator<char>());
      tokenizer::EncodeOptions enc;
      enc.add_special = false;
      enc.parse_special = false;
      const std::vector<int32_t> ids = (*tok)->encode(text, enc);
      structured::Matcher matcher(*grammar);
      std::vector<uint64_t> mask(cache.tokens()->num_mask_words());
      nlohmann::json out = {{"accepted", true}, {"num_tokens", ids.size()}};
      std::string prefix;
      for (size_t i = 0; i < ids.size(); ++i) {
        matcher.fill_mask(mask);
        const int32_t t = ids[i];
        if (!structured::mask_allows(mask, t) || !matcher.accept_token(t).ok()) {
          out["accepted"] = false;
          out["error"] = "token " + std::to_string(i) + " (id " + std::to_string(t) + ", '" +
                         std::string(cache.tokens()->bytes(t)) + "') is not allowed after '" +
                         prefix + "'";
          break;
        }
        prefix += cache.tokens()->bytes(t);
      }
      if (out["accepted"] == true && !matcher.can_end()) {
        out["accepted"] = false;
        out["error"] = "the text is a valid prefix but the grammar cannot end after it";
      }
      std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      return 0;
    };
  });
}

}  // namespace pagoda::cli
