// Logging: spdlog to stderr. Libraries log through these; the CLI sets the level.
#pragma once

#include <spdlog/spdlog.h>

#define PAGODA_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define PAGODA_LOG_INFO(...) spdlog::info(__VA_ARGS__)
#define PAGODA_LOG_WARN(...) spdlog::warn(__VA_ARGS__)
#define PAGODA_LOG_ERROR(...) spdlog::error(__VA_ARGS__)

namespace pagoda {
// Routes the default logger to stderr with a compact pattern. Idempotent.
void init_logging(spdlog::level::level_enum level = spdlog::level::info);
}  // namespace pagoda
