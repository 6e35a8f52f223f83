#include "base/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <mutex>

namespace pagoda {

void init_logging(spdlog::level::level_enum level) {
  static std::once_flag once;
  std::call_once(once, [] {
    auto logger = spdlog::stderr_color_mt("pagoda");
    logger->set_pattern("[%H:%M:%S.%e] %^%l%$ %v");
    spdlog::set_default_logger(logger);
  });
  spdlog::set_level(level);
}

}  // namespace pagoda
