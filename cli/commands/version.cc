#include <cstdio>

#include "cli/commands/commands.h"

namespace pagoda::cli {

void register_version(CLI::App& app, CommandAction& action) {
  CLI::App* cmd = app.add_subcommand("version", "Print the pagoda version");
  cmd->callback([&action] {
    action = [] {
      std::printf("pagoda 0.1.0\n");
      return 0;
    };
  });
}

}  // namespace pagoda::cli
