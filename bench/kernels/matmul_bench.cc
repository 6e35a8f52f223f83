// Matmul micro benchmarks per weight type on the active ISA (PAGODA_ISA, PAGODA_THREADS):
//   BM_Gemv/<type>: single-token decode over a 256+ MiB set of 2048x5632 matrices (cycled so no
//     cache holds them): bytes/s is the weight read bandwidth, to compare with BM_MemoryRead.
//   BM_Gemm/<type>/<m>: m tokens against one 5632x2048 matrix (which stays in the L2/L3 caches):
//     "GOP/s" = 2·rows·cols·m / time.
//   BM_GemmStream/<type>/<m>: the same over a 256+ MiB set cycled like BM_Gemv's, as a model's
//     batched decode reads its weights (from memory, once per step).
#include <benchmark/benchmark.h>

#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "base/page_buffer.h"
#include "kernels/isa.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "tensor/dtype.h"

namespace {

using pagoda::kernels::WeightView;
using pagoda::tensor::DType;

struct MatrixSet {
  pagoda::PageBuffer bytes;  // on huge pages, as a loaded model's weights are
  std::vector<WeightView> views;
  pagoda::PageBuffer packed;  // each view's pre-packed copy (PAGODA_PACK=0: none)
  size_t matrix_bytes = 0;
};

// `copies` copies of one random rows x cols matrix in `t`, back to back, each with the kernels'
// pre-packed copy where they have one (as a loaded model has).
const MatrixSet& matrices(DType t, int64_t rows, int64_t cols, size_t min_total_bytes) {
  static std::map<std::string, MatrixSet> cache;
  const std::string key = std::string(pagoda::tensor::dtype_name(t)) + "/" + std::to_string(rows) +
                          "x" + std::to_string(cols) + "/" + std::to_string(min_total_bytes);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  MatrixSet& s = cache[key];
  const size_t row_bytes = *pagoda::tensor::row_size_bytes(t, static_cast<uint64_t>(cols));
  s.matrix_bytes = row_bytes * static_cast<size_t>(rows);
  const size_t copies =
      std::max<size_t>(1, (min_total_bytes + s.matrix_bytes - 1) / s.matrix_bytes);
  s.bytes =
      std::move(*pagoda::PageBuffer::allocate(s.matrix_bytes * copies, pagoda::HugePages::kYes));
  std::mt19937 rng(42);
  std::normal_distribution<float> g(0, 0.5f);
  std::vector<float> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    for (auto& v : row)
      v = g(rng);
    pagoda::kernels::quantize_row(t, row.data(),
                                  s.bytes.data() + static_cast<size_t>(r) * row_bytes, cols);
  }
  for (size_t c = 1; c < copies; ++c)
    std::memcpy(s.bytes.data() + c * s.matrix_bytes, s.bytes.data(), s.matrix_bytes);
  for (size_t c = 0; c < copies; ++c)
    s.views.push_back(WeightView{t, rows, cols, row_bytes, s.bytes.data() + c * s.matrix_bytes});
  const size_t packed = pagoda::kernels::packed_size(s.views[0]);
  if (packed > 0) {
    s.packed = std::move(*pagoda::PageBuffer::allocate(packed * copies, pagoda::HugePages::kYes));
    for (size_t c = 0; c < copies; ++c) {
      s.views[c].packed = s.packed.data() + c * packed;
      pagoda::kernels::pack_weight(s.views[c], s.packed.data() + c * packed);
    }
  }
  return s;
}

std::vector<float> random_acts(size_t n) {
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> v(n);
  for (auto& x : v)
    x = g(rng);
  return v;
}

void set_label(benchmark::State& state, DType t) {
  state.SetLabel(std::string(pagoda::tensor::dtype_name(t)) + " " +
                 std::string(pagoda::kernels::isa_name(pagoda::kernels::active_isa())) + " " +
                 std::to_string(pagoda::kernels::num_threads()) + "t");
}

void BM_Gemv(benchmark::State& state) {
  const auto t = static_cast<DType>(state.range(0));
  const int64_t rows = 5632, cols = 2048;
  const MatrixSet& s = matrices(t, rows, cols, size_t{256} << 20);
  const auto x = random_acts(static_cast<size_t>(cols));
  std::vector<float> y(static_cast<size_t>(rows));
  size_t i = 0;
  for (auto _ : state) {
    pagoda::kernels::matmul(s.views[i++ % s.views.size()], x.data(), 1, y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.matrix_bytes));
  set_label(state, t);
}

// Compute-bound view of the same kernel: one 512x2048 matrix that stays in L2/L3.
void BM_GemvHot(benchmark::State& state) {
  const auto t = static_cast<DType>(state.range(0));
  const int64_t rows = 512, cols = 2048;
  const MatrixSet& s = matrices(t, rows, cols, 0);
  const auto x = random_acts(static_cast<size_t>(cols));
  std::vector<float> y(static_cast<size_t>(rows));
  for (auto _ : state) {
    pagoda::kernels::matmul(s.views[0], x.data(), 1, y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * s.matrix_bytes));
  set_label(state, t);
}

// m tokens against one matrix that stays in L2/L3 (min_total_bytes 0), or cycled through a set
// that no cache holds (BM_GemmStream: a model's batched decode, whose weights come from memory).
void run_gemm(benchmark::State& state, size_t min_total_bytes) {
  const auto t = static_cast<DType>(state.range(0));
  const int64_t m = state.range(1);
  const int64_t rows = 5632, cols = 2048;
  const MatrixSet& s = matrices(t, rows, cols, min_total_bytes);
  const auto x = random_acts(static_cast<size_t>(cols * m));
  std::vector<float> y(static_cast<size_t>(rows * m));
  size_t i = 0;
  for (auto _ : state) {
    pagoda::kernels::matmul(s.views[i++ % s.views.size()], x.data(), m, y.data());
    benchmark::ClobberMemory();
  }
  state.counters["GOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(rows * cols * m) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  set_label(state, t);
}
void BM_Gemm(benchmark::State& state) {
  run_gemm(state, 0);
}
void BM_GemmStream(benchmark::State& state) {
  run_gemm(state, size_t{256} << 20);
}

const DType kTypes[] = {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                        DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                        DType::kF16,  DType::kBF16, DType::kF32};

void gemv_args(benchmark::internal::Benchmark* b) {
  for (DType t : kTypes)
    b->Arg(static_cast<int64_t>(t));
}

void gemm_args(benchmark::internal::Benchmark* b) {
  for (DType t : kTypes)
    for (int64_t m : {4, 16, 24, 64, 512})
      b->Args({static_cast<int64_t>(t), m});
}

// Batched decode's sizes, for the types with a VNNI pair GEMM.
void gemm_stream_args(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K})
    for (int64_t m : {4, 7, 8, 16})  // 7 and 8: either side of the streamed few-token kernels
      b->Args({static_cast<int64_t>(t), m});
}

BENCHMARK(BM_Gemv)->Apply(gemv_args)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_GemvHot)->Apply(gemv_args)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Gemm)->Apply(gemm_args)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GemmStream)->Apply(gemm_stream_args)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
