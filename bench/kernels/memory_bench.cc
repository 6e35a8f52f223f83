// Memory read bandwidth of this machine: every thread sums its share of a 512 MiB buffer (the
// roofline the GEMV benchmarks are measured against).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/isa.h"

namespace {

void BM_MemoryRead(benchmark::State& state) {
  const size_t bytes = size_t{512} << 20;
  static std::vector<uint64_t> buf(bytes / 8, 1);
  const int nth = pagoda::kernels::num_threads();
  uint64_t total = 0;
  for (auto _ : state) {
    uint64_t sum = 0;
#pragma omp parallel for num_threads(nth) reduction(+ : sum) schedule(static)
    for (size_t i = 0; i < buf.size(); ++i)
      sum += buf[i];
    total += sum;
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["threads"] = nth;
}
BENCHMARK(BM_MemoryRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace
