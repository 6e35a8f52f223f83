// ISA detection and selection (see isa.h) and the thread-count setting.
#include "kernels/isa.h"

#include <omp.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <atomic>
#include <cstdlib>
#include <string>

#include "base/check.h"
#include "base/log.h"
#include "kernels/cpu/kernel_table.h"

namespace pagoda::kernels {
namespace {

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// CPUID.1:ECX bit 29 (clang-14's __builtin_cpu_supports does not know "f16c").
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 29)) != 0;
}
#endif

// AMX-TILE and AMX-INT8 (CPUID.(7,0):EDX bits 24, 25), the tile state enabled by the OS (XCR0
// bits 17, 18), and this process's permission to use it: Linux grants the tile data's 8 KiB of
// extra state per thread only on request (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA).
// Asked once; the answer holds for every thread of the process.
[[maybe_unused]] bool amx_usable() {  // (x86-64 only)
#if defined(__x86_64__) && defined(__linux__) && (defined(__GNUC__) || defined(__clang__))
  static const bool usable = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    if ((edx & (1u << 24)) == 0 || (edx & (1u << 25)) == 0) return false;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0 || (ecx & (1u << 27)) == 0) return false;
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));  // OSXSAVE checked above
    if ((lo & (3u << 17)) != (3u << 17)) return false;
    constexpr long kArchReqXcompPerm = 0x1023;
    constexpr long kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return usable;
#else
  return false;
#endif
}

bool cpu_has(Isa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  switch (isa) {
    case Isa::kScalar:
    case Isa::kPortable:
      return true;
    case Isa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
    case Isa::kAvx512:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c() &&
             __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
    case Isa::kAmx:
      return cpu_has(Isa::kAvx512) && __builtin_cpu_supports("avx512vbmi") && amx_usable();
  }
  return false;
#else
  return isa == Isa::kScalar || isa == Isa::kPortable;
#endif
}

// Every path, scalar first (the order supported_isas() reports).
constexpr Isa kAllIsas[] = {Isa::kScalar, Isa::kPortable, Isa::kAvx2, Isa::kAvx512, Isa::kAmx};

Isa best_supported() {
  if (isa_supported(Isa::kAmx)) return Isa::kAmx;
  if (isa_supported(Isa::kAvx512)) return Isa::kAvx512;
  if (isa_supported(Isa::kAvx2)) return Isa::kAvx2;
  if (isa_supported(Isa::kPortable)) return Isa::kPortable;
  return Isa::kScalar;
}

Isa initial_isa() {
  const char* env = std::getenv("PAGODA_ISA");
  if (env == nullptr || *env == '\0') return best_supported();
  const std::string want(env);
  for (Isa isa : kAllIsas) {
    if (want == isa_name(isa)) {
      if (isa_supported(isa)) return isa;
      PAGODA_LOG_WARN("PAGODA_ISA={}: not supported on this CPU/build; using {}", want,
                      isa_name(best_supported()));
      return best_supported();
    }
  }
  PAGODA_LOG_WARN(
      "PAGODA_ISA={}: unknown (expected amx, avx512, avx2, portable or scalar); using {}", want,
      isa_name(best_supported()));
  return best_supported();
}

std::atomic<int>& isa_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_isa())};
  return slot;
}

int initial_threads() {
  const int cores = omp_get_num_procs();
  const char* env = std::getenv("PAGODA_THREADS");
  if (env == nullptr || *env == '\0') return cores;
  char* end = nullptr;
  const long n = std::strtol(env, &end, 10);
  if (end == env || *end != '\0' || n < 1 || n > 4096) {
    PAGODA_LOG_WARN("PAGODA_THREADS={}: expected a positive integer; using {}", env, cores);
    return cores;
  }
  return static_cast<int>(n);
}

std::atomic<int>& threads_slot() {
  static std::atomic<int> slot{initial_threads()};
  return slot;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kPortable:
      return "portable";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAmx:
      return "amx";
  }
  return "?";
}

bool isa_supported(Isa isa) {
  return cpu::kernels_for(isa) != nullptr && cpu_has(isa);
}

std::vector<Isa> supported_isas() {
  std::vector<Isa> out;
  for (Isa isa : kAllIsas) {
    if (isa_supported(isa)) out.push_back(isa);
  }
  return out;
}

Isa active_isa() {
  return static_cast<Isa>(isa_slot().load(std::memory_order_relaxed));
}

void set_active_isa(Isa isa) {
  PAGODA_CHECK(isa_supported(isa));
  isa_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
}

int num_threads() {
  return threads_slot().load(std::memory_order_relaxed);
}

void set_num_threads(int n) {
  PAGODA_CHECK(n >= 1);
  threads_slot().store(n, std::memory_order_relaxed);
}

bool release_worker_threads() {
  // libgomp: frees the calling thread's pool (its workers exit, and the count of managed threads
  // drops); LLVM's libomp: puts the workers to sleep.
  return omp_pause_resource(omp_pause_soft, omp_get_initial_device()) == 0;
}

namespace cpu {
const CpuKernels& active_kernels() {
  return *kernels_for(active_isa());
}
}  // namespace cpu

}  // namespace pagoda::kernels
