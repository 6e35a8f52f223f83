// Paged attention benchmarks on the active ISA, TinyLlama-1.1B head shapes (32 query heads, 4 KV
// heads, head_dim 64, f16 cache, 16-token blocks):
//   BM_AttentionDecode/<ctx>/<seqs>: one new token for each of `seqs` sequences of `ctx` cached
//     tokens, in one paged_attention_batch call; bytes/s = K+V bytes read.
//   BM_AttentionPrefill/<tokens>: a prefill chunk attending causally to itself.
#include <benchmark/benchmark.h>

#include <numeric>
#include <random>
#include <vector>

#include "kernels/attention.h"
#include "kernels/isa.h"
#include "tensor/float16.h"

namespace {

using pagoda::kernels::AttentionParams;
using pagoda::kernels::AttentionSequence;
using pagoda::kernels::KvLayerView;

constexpr int32_t kHeads = 32, kKvHeads = 4, kHeadDim = 64, kBlock = 16;

struct Setup {
  std::vector<uint16_t> k, v;
  KvLayerView view;
  std::vector<std::vector<int32_t>> tables;
};

Setup make_setup(int64_t seqs, int64_t ctx) {
  Setup s;
  const int64_t blocks_per_seq = (ctx + kBlock - 1) / kBlock;
  const int64_t num_blocks = seqs * blocks_per_seq;
  const size_t n = static_cast<size_t>(num_blocks) * kKvHeads * kBlock * kHeadDim;
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0, 1);
  s.k.resize(n);
  s.v.resize(n);
  for (size_t i = 0; i < n; ++i) {
    s.k[i] = pagoda::tensor::fp32_to_fp16(g(rng));
    s.v[i] = pagoda::tensor::fp32_to_fp16(g(rng));
  }
  s.view = KvLayerView{
      pagoda::tensor::DType::kF16, kBlock, kKvHeads, kHeadDim, num_blocks, s.k.data(), s.v.data()};
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  for (int64_t i = 0; i < seqs; ++i) {
    s.tables.emplace_back(ids.begin() + i * blocks_per_seq, ids.begin() + (i + 1) * blocks_per_seq);
  }
  return s;
}

void BM_AttentionDecode(benchmark::State& state) {
  const int64_t ctx = state.range(0), seqs = state.range(1);
  Setup s = make_setup(seqs, ctx);
  std::vector<float> q(static_cast<size_t>(seqs * kHeads * kHeadDim), 0.1f);
  std::vector<float> out(q.size());
  std::vector<int32_t> pos(static_cast<size_t>(seqs), static_cast<int32_t>(ctx - 1));
  std::vector<AttentionSequence> batch;
  for (int64_t i = 0; i < seqs; ++i) {
    batch.push_back(AttentionSequence{q.data() + i * kHeads * kHeadDim,
                                      out.data() + i * kHeads * kHeadDim, pos.data() + i, 1,
                                      s.tables[static_cast<size_t>(i)]});
  }
  const AttentionParams params{kHeads, 0.125f};
  for (auto _ : state) {
    pagoda::kernels::paged_attention_batch(batch, s.view, params);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * seqs * ctx * kKvHeads * kHeadDim * 2 * 2);
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations() * seqs),
                                               benchmark::Counter::kIsRate);
  state.SetLabel(std::string(pagoda::kernels::isa_name(pagoda::kernels::active_isa())));
}

void BM_AttentionPrefill(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  Setup s = make_setup(1, tokens);
  std::vector<float> q(static_cast<size_t>(tokens * kHeads * kHeadDim), 0.1f);
  std::vector<float> out(q.size());
  std::vector<int32_t> pos(static_cast<size_t>(tokens));
  std::iota(pos.begin(), pos.end(), 0);
  const AttentionParams params{kHeads, 0.125f};
  for (auto _ : state) {
    pagoda::kernels::paged_attention(q.data(), tokens, pos.data(), s.view, s.tables[0], params,
                                     out.data());
    benchmark::ClobberMemory();
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations() * tokens),
                                               benchmark::Counter::kIsRate);
  state.SetLabel(std::string(pagoda::kernels::isa_name(pagoda::kernels::active_isa())));
}

BENCHMARK(BM_AttentionDecode)
    ->Args({64, 1})
    ->Args({512, 1})
    ->Args({4096, 1})
    ->Args({512, 16})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AttentionPrefill)->Arg(512)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
