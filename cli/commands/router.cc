// `pagoda router --config FILE`: the gateway across `pagoda serve` replicas (router/).
#include <cstdio>
#include <string>
#include <thread>

#include "cli/command.h"
#include "cli/commands/commands.h"
#include "router/router_server.h"

namespace pagoda::cli {

void register_router(CLI::App& app, CommandAction& action) {
  struct Options {
    std::string config;
    unsigned threads = 0;
    bool check = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "router",
      "OpenAI-compatible gateway across pagoda serve replicas (health, retries, fallback)");
  cmd->add_option("--config", o->config, "YAML config file (reloaded on SIGHUP)")->required();
  cmd->add_option("--threads", o->threads, "I/O threads (0: one per core)");
  cmd->add_flag("--check", o->check, "Validate the config file and exit");
  cmd->callback([&action, o] {
    action = [o]() -> int {
      auto config = router::load_router_config(o->config);
      if (!config.ok()) return fail(config.status().message());
      if (o->check) {
        std::printf("%s: ok (%zu backends)\n", o->config.c_str(), config->backends.size());
        return 0;
      }
      unsigned threads =
          o->threads ? o->threads : std::max(1u, std::thread::hardware_concurrency());
      router::RouterServer server(std::move(*config), o->config, threads);
      Status s = server.start();
      if (!s.ok()) return fail(s.message());
      server.handle_signals();
      std::printf("pagoda router listening on port %u\n", static_cast<unsigned>(server.port()));
      std::fflush(stdout);
      return server.wait();
    };
  });
}

}  // namespace pagoda::cli
