// ISA selection: the supported set agrees with the CPU flags the kernel reports in /proc/cpuinfo
// (an independent source), scalar is always there, and switching paths round-trips.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "isa_guard.h"
#include "kernels/isa.h"

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
  EXPECT_EQ(isa_supported(Isa::kAvx512),
            has(flags, {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni"}));
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

}  // namespace
}  // namespace pagoda::kernels
