// The LoRA fixtures tools/lora_fixtures writes for the demo model, made once per test binary run
// (again when the script or the model is newer than the stamp) into the build tree.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>

#include "test_support.h"

namespace pagoda {
namespace fs = std::filesystem;

inline fs::path demo_model() {
  return testing::source_dir() / "models/demo.gguf";
}

// tools/lora_fixtures' output in the build tree (made once per test binary run when stale).
inline fs::path lora_fixtures(std::string* why) {
  static std::once_flag once;
  static fs::path dir;
  static std::string error;
  std::call_once(once, [] {
    const fs::path script = testing::source_dir() / "tools/lora_fixtures/make_lora_fixtures.py";
    const fs::path out = testing::binary_dir() / "lora_fixtures";
    const fs::path stamp = out / ".complete";
    std::error_code ec;
    const bool fresh = fs::exists(stamp) &&
                       fs::last_write_time(stamp, ec) >= fs::last_write_time(script, ec) &&
                       fs::last_write_time(stamp, ec) >= fs::last_write_time(demo_model(), ec);
    if (!fresh) {
      const std::string cmd = "/usr/bin/python3 '" + script.string() + "' --base '" +
                              demo_model().string() + "' --out '" + out.string() + "'";
      std::printf("[ lora     ] %s\n", cmd.c_str());
      std::fflush(stdout);
      if (std::system(cmd.c_str()) != 0 || !fs::exists(stamp)) {
        error = "make_lora_fixtures.py failed: " + cmd;
        return;
      }
    }
    dir = out;
  });
  if (why != nullptr) *why = error;
  return dir;
}

#define REQUIRE_LORA_FIXTURES(var)                \
  std::string var##_why;                          \
  const fs::path var = lora_fixtures(&var##_why); \
  ASSERT_FALSE(var.empty()) << var##_why

}  // namespace pagoda
