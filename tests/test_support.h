// Shared test helpers: where the fixtures are, and skipping cleanly when they are absent.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace pagoda::testing {

// ../shared/fixtures beside the checkout.
inline std::filesystem::path fixtures_dir() {
  return PAGODA_FIXTURES_DIR;
}
inline std::filesystem::path source_dir() {
  return PAGODA_SOURCE_DIR;
}
inline std::filesystem::path binary_dir() {
  return PAGODA_BINARY_DIR;
}

inline std::filesystem::path fixture(const std::string& rel) {
  return fixtures_dir() / rel;
}

}  // namespace pagoda::testing

// Skips the current test with a clear message when the shared fixtures are not present.
#define PAGODA_REQUIRE_FIXTURE(path)                                                       \
  do {                                                                                     \
    if (!std::filesystem::exists(path))                                                    \
      GTEST_SKIP() << "fixture not found: " << (path) << " (expected ../shared/fixtures)"; \
  } while (0)
