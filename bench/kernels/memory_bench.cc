// Memory read bandwidth of this machine: every thread sums its share of a 512 MiB buffer with
// kernels::stream_sum (the roofline the GEMV benchmarks are measured against; the same
// measurement as `pagoda bench`).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/isa.h"
#include "kernels/ops.h"

namespace {

void BM_MemoryRead(benchmark::State& state) {
  const size_t bytes = size_t{512} << 20;
  static std::vector<uint64_t> buf(bytes / 8, 1);
  const int nth = pagoda::kernels::num_threads();
  uint64_t total = 0;
  for (auto _ : state) {
    total += pagoda::kernels::stream_sum(buf.data(), buf.size());
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["threads"] = nth;
}
BENCHMARK(BM_MemoryRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace
