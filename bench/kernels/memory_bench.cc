// Memory read bandwidth of this machine: every thread sums its share of a 512 MiB buffer with
// kernels::stream_sum (the roofline the GEMV benchmarks are measured against; the same
// measurement as `pagoda bench`). The buffer is a PageBuffer (huge pages), like the weights.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/page_buffer.h"
#include "kernels/isa.h"
#include "kernels/ops.h"

namespace {

void BM_MemoryRead(benchmark::State& state) {
  const size_t bytes = size_t{512} << 20;
  static const pagoda::PageBuffer buf = [&] {
    auto b = std::move(*pagoda::PageBuffer::allocate(bytes, pagoda::HugePages::kYes));
    std::memset(b.data(), 1, bytes);
    return b;
  }();
  const int nth = pagoda::kernels::num_threads();
  uint64_t total = 0;
  for (auto _ : state) {
    total += pagoda::kernels::stream_sum(reinterpret_cast<const uint64_t*>(buf.data()), bytes / 8);
    benchmark::DoNotOptimize(total);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["threads"] = nth;
}
BENCHMARK(BM_MemoryRead)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace
