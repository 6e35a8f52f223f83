// ISA selection: the supported set agrees with the CPU flags the kernel reports in /proc/cpuinfo
// (an independent source), scalar is always there, and switching paths round-trips; releasing the
// calling thread's workers ends them (counted in /proc/self/task) and kernels still work after.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "isa_guard.h"
#include "kernels/isa.h"
#include "kernels/ops.h"

namespace pagoda::kernels {
namespace {

std::set<std::string> cpuinfo_flags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      std::string w;
      while (words >> w)
        flags.insert(w);
      break;
    }
  }
  return flags;
}

bool has(const std::set<std::string>& flags, std::initializer_list<const char*> names) {
  return std::all_of(names.begin(), names.end(),
                     [&](const char* n) { return flags.count(n) != 0; });
}

TEST(IsaTest, SupportedSetMatchesCpuFlags) {
  const auto isas = supported_isas();
  ASSERT_FALSE(isas.empty());
  EXPECT_EQ(isas.front(), Isa::kScalar);
  EXPECT_TRUE(isa_supported(Isa::kPortable));  // Highway's static target: every build
  std::string names;
  for (Isa isa : isas)
    names += std::string(isa_name(isa)) + " ";
  RecordProperty("supported_isas", names);
  std::printf("supported ISAs: %s(active: %s)\n", names.c_str(),
              std::string(isa_name(active_isa())).c_str());
#if defined(__x86_64__)
  const auto flags = cpuinfo_flags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags";
  EXPECT_EQ(isa_supported(Isa::kAvx2), has(flags, {"avx2", "fma", "f16c"}));
  const bool avx512 =
      has(flags, {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"});
  EXPECT_EQ(isa_supported(Isa::kAvx512), avx512);
  // (The kernel lists the amx flags only where it supports the tile state.)
  EXPECT_EQ(isa_supported(Isa::kAmx), avx512 && has(flags, {"avx512vbmi", "amx_tile", "amx_int8"}));
#endif
}

TEST(IsaTest, SwitchingRoundTrips) {
  const Isa before = active_isa();
  for (Isa isa : supported_isas()) {
    IsaGuard guard(isa);
    EXPECT_EQ(active_isa(), isa);
  }
  EXPECT_EQ(active_isa(), before);
}

TEST(IsaTest, ThreadCountIsPositiveAndSettable) {
  const int before = num_threads();
  EXPECT_GE(before, 1);
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
  set_num_threads(before);
}

// Threads of this process now (/proc/self/task: an independent count).
int process_threads() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

TEST(IsaTest, ReleaseWorkerThreadsEndsTheCallersTeam) {
  const int before = num_threads();
  set_num_threads(4);  // three workers, whatever the core count
  std::vector<uint64_t> data(1 << 12);
  std::iota(data.begin(), data.end(), uint64_t{1});
  const uint64_t want = data.size() * (data.size() + 1) / 2;
  EXPECT_EQ(stream_sum(data.data(), data.size()), want);  // the team exists now
  const int with_team = process_threads();
  EXPECT_TRUE(release_worker_threads());
  int released = process_threads();
#if !defined(__clang__)
  // The workers exit after the release returns: on a loaded machine /proc/self/task still lists
  // some for a moment. Wait for them (up to 10 s) rather than read the count once.
  for (int i = 0; i < 1000 && released > with_team - 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    released = process_threads();
  }
#endif
#if defined(__clang__)
  // LLVM's libomp puts the workers to sleep rather than ending them.
  EXPECT_LE(released, with_team);
#else
  // libgomp ends them (and stops counting them against the cores).
  EXPECT_EQ(released, with_team - 3);
#endif
  // The next kernel call starts a team again and computes the same.
  EXPECT_EQ(stream_sum(data.data(), data.size()), want);
  EXPECT_GE(process_threads(), released);
  set_num_threads(before);
}

}  // namespace
}  // namespace pagoda::kernels
