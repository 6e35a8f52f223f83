// The kernels issue's other GEMM design, measured against ours: dequantise the weights to bf16
// and multiply with oneDNN's bf16 matmul (AMX-BF16 on Sapphire Rapids, AVX512-BF16 on Zen 4;
// ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 keeps it off the tiles), instead of int8 dot products on
// quantised activations (kernels_bench's BM_Gemm, same shape and "GOP/s").
//   BM_OneDnnBf16/<m>: m tokens against a 5632x2048 weight already in bf16, in oneDNN's own
//     layout (reordered once, outside the timing): the f32 activations' conversion, the matmul
//     and its f32 output. Its best case: no dequantisation at all.
//   BM_OneDnnBf16Dequant/<type>/<m>: the same from the quantised weight, dequantised to bf16 on
//     every call (row by row with the kernels' dequantize_row, then a oneDNN reorder into its
//     layout): what a prefill would pay to keep only the quantised weights in memory.
// oneDNN runs on the same OpenMP runtime (Debian's libdnnl uses libgomp) and thread count.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <random>
#include <string>
#include <vector>

#include "kernels/isa.h"
#include "kernels/quant.h"
#include "tensor/dtype.h"

namespace {

using pagoda::tensor::DType;
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

constexpr int64_t kRows = 5632, kCols = 2048;

std::vector<float> random_vec(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0, scale);
  std::vector<float> v(n);
  for (auto& x : v)
    x = g(rng);
  return v;
}

// One matmul y[m, rows] = x[m, cols] · Wᵀ: x f32 converted to bf16, W (f32 at w_f32) converted
// to bf16 and reordered into oneDNN's chosen layout by load_weights(), y f32. Every primitive is
// created once, here.
struct OneDnnMatmul {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  dnnl::reorder x_to_bf16, w_to_bf16, w_to_layout;
  dnnl::memory x_f32, x_bf16, w_f32, w_plain, w_layout, y;

  OneDnnMatmul(int64_t m, const std::vector<float>& x, const float* w, std::vector<float>& out) {
    omp_set_num_threads(pagoda::kernels::num_threads());
    const dnnl::memory::desc x_md({m, kCols}, dt::bf16, tag::ab);
    const dnnl::memory::desc w_any({kCols, kRows}, dt::bf16, tag::any);
    const dnnl::memory::desc y_md({m, kRows}, dt::f32, tag::ab);
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(x_md, w_any, y_md), eng);
    prim = dnnl::matmul(pd);
    x_f32 = dnnl::memory({{m, kCols}, dt::f32, tag::ab}, eng, const_cast<float*>(x.data()));
    x_bf16 = dnnl::memory(x_md, eng);
    x_to_bf16 = dnnl::reorder(x_f32, x_bf16);
    // W [rows, cols] row-major is the matmul's B [cols, rows] in "ba" order.
    w_f32 = dnnl::memory({{kCols, kRows}, dt::f32, tag::ba}, eng, const_cast<float*>(w));
    w_plain = dnnl::memory({{kCols, kRows}, dt::bf16, tag::ba}, eng);
    w_to_bf16 = dnnl::reorder(w_f32, w_plain);
    w_layout = dnnl::memory(pd.weights_desc(), eng);
    w_to_layout = dnnl::reorder(w_plain, w_layout);
    y = dnnl::memory(y_md, eng, out.data());
  }
  void load_weights() {
    w_to_bf16.execute(strm, w_f32, w_plain);
    w_to_layout.execute(strm, w_plain, w_layout);
    strm.wait();
  }
  void run() {
    x_to_bf16.execute(strm, x_f32, x_bf16);
    prim.execute(strm, {{DNNL_ARG_SRC, x_bf16}, {DNNL_ARG_WEIGHTS, w_layout}, {DNNL_ARG_DST, y}});
    strm.wait();
  }
  std::string impl() const { return pd.impl_info_str(); }
};

void set_counters(benchmark::State& state, int64_t m, const std::string& impl) {
  state.counters["GOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(kRows * kCols * m) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
  state.SetLabel(impl + " " + std::to_string(pagoda::kernels::num_threads()) + "t");
}

void BM_OneDnnBf16(benchmark::State& state) {
  const int64_t m = state.range(0);
  const auto x = random_vec(static_cast<size_t>(m * kCols), 7, 1.0f);
  const auto w = random_vec(static_cast<size_t>(kRows * kCols), 42, 0.5f);
  std::vector<float> y(static_cast<size_t>(m * kRows));
  OneDnnMatmul mm(m, x, w.data(), y);
  mm.load_weights();
  for (auto _ : state) {
    mm.run();
    benchmark::ClobberMemory();
  }
  set_counters(state, m, mm.impl());
}

void BM_OneDnnBf16Dequant(benchmark::State& state) {
  const auto t = static_cast<DType>(state.range(0));
  const int64_t m = state.range(1);
  const auto x = random_vec(static_cast<size_t>(m * kCols), 7, 1.0f);
  const auto w = random_vec(static_cast<size_t>(kRows * kCols), 42, 0.5f);
  const size_t row_bytes = *pagoda::tensor::row_size_bytes(t, static_cast<uint64_t>(kCols));
  std::vector<uint8_t> q(row_bytes * kRows);
  for (int64_t r = 0; r < kRows; ++r)
    pagoda::kernels::quantize_row(t, w.data() + r * kCols, q.data() + r * row_bytes, kCols);
  std::vector<float> y(static_cast<size_t>(m * kRows));
  std::vector<float> deq(static_cast<size_t>(kRows * kCols));
  OneDnnMatmul mm(m, x, deq.data(), y);
  for (auto _ : state) {
#pragma omp parallel for schedule(static) num_threads(pagoda::kernels::num_threads())
    for (int64_t r = 0; r < kRows; ++r)
      pagoda::kernels::dequantize_row(t, q.data() + r * row_bytes, deq.data() + r * kCols, kCols);
    mm.load_weights();
    mm.run();
    benchmark::ClobberMemory();
  }
  set_counters(state, m, std::string(pagoda::tensor::dtype_name(t)) + " dequantised, " + mm.impl());
}

BENCHMARK(BM_OneDnnBf16)->Arg(16)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_OneDnnBf16Dequant)
    ->Args({static_cast<int64_t>(DType::kQ4_0), 512})
    ->Args({static_cast<int64_t>(DType::kQ4_K), 512})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
