// Paged attention benchmarks on the active ISA, TinyLlama-1.1B head shapes (32 query heads, 4 KV
// heads, head_dim 64, 16-token blocks):
//   BM_AttentionDecode/<ctx>/<seqs>/<dtype>: one new token for each of `seqs` sequences of `ctx`
//     cached tokens, in one paged_attention_batch call; dtype 0 = f16, 1 = bf16, 2 = q8_0 cache;
//     bytes/s = K+V bytes read.
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
  std::vector<uint8_t> k, v;
  KvLayerView view;
  std::vector<std::vector<int32_t>> tables;
  size_t row_bytes = 0;
};

pagoda::tensor::DType dtype_arg(int64_t i) {
  return i == 1 ? pagoda::tensor::DType::kBF16
                : (i == 2 ? pagoda::tensor::DType::kQ8_0 : pagoda::tensor::DType::kF16);
}

Setup make_setup(int64_t seqs, int64_t ctx, pagoda::tensor::DType dtype) {
  Setup s;
  const int64_t blocks_per_seq = (ctx + kBlock - 1) / kBlock;
  const int64_t num_blocks = seqs * blocks_per_seq;
  s.row_bytes = static_cast<size_t>(pagoda::kernels::kv_row_bytes(dtype, kHeadDim).value());
  const size_t n = static_cast<size_t>(num_blocks) * kKvHeads * kBlock * s.row_bytes;
  std::mt19937 rng(3);
  s.k.resize(n);
  s.v.resize(n);
  s.view = KvLayerView{dtype, kBlock, kKvHeads, kHeadDim, num_blocks, s.k.data(), s.v.data()};
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::normal_distribution<float> g(0, 1);
  std::vector<float> kf(static_cast<size_t>(blocks_per_seq * kBlock * kKvHeads * kHeadDim));
  std::vector<float> vf(kf.size());
  std::vector<int32_t> pos(static_cast<size_t>(blocks_per_seq * kBlock));
  std::iota(pos.begin(), pos.end(), 0);
  for (int64_t i = 0; i < seqs; ++i) {
    s.tables.emplace_back(ids.begin() + i * blocks_per_seq, ids.begin() + (i + 1) * blocks_per_seq);
    for (size_t j = 0; j < kf.size(); ++j) {
      kf[j] = g(rng);
      vf[j] = g(rng);
    }
    pagoda::kernels::kv_cache_write(s.view, s.tables.back(), pos.data(),
                                    static_cast<int64_t>(pos.size()), kf.data(), vf.data());
  }
  return s;
}

void BM_AttentionDecode(benchmark::State& state) {
  const int64_t ctx = state.range(0), seqs = state.range(1);
  Setup s = make_setup(seqs, ctx, dtype_arg(state.range(2)));
  std::vector<float> q(static_cast<size_t>(seqs * kHeads * kHeadDim), 0.1f);
  std::vector<float> out(q.size());
  std::vector<int32_t> pos(static_cast<size_t>(seqs), static_cast<int32_t>(ctx - 1));
  std::vector<AttentionSequence> batch;
  for (int64_t i = 0; i < seqs; ++i) {
    batch.push_back(AttentionSequence{q.data() + i * kHeads * kHeadDim,
                                      out.data() + i * kHeads * kHeadDim, pos.data() + i, 1,
                                      s.tables[static_cast<size_t>(i)]});
  }
  AttentionParams params{kHeads, 0.125f};
  params.online_softmax = state.range(3) != 0;
  for (auto _ : state) {
    pagoda::kernels::paged_attention_batch(batch, s.view, params);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * seqs * ctx * kKvHeads *
                          static_cast<int64_t>(s.row_bytes) * 2);
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations() * seqs),
                                               benchmark::Counter::kIsRate);
  state.SetLabel(std::string(pagoda::kernels::isa_name(pagoda::kernels::active_isa())) + " " +
                 std::string(pagoda::tensor::dtype_name(s.view.dtype)) +
                 (params.online_softmax ? " online" : " exact"));
}

void BM_AttentionPrefill(benchmark::State& state) {
  const int64_t tokens = state.range(0);
  Setup s = make_setup(1, tokens, pagoda::tensor::DType::kF16);
  std::vector<float> q(static_cast<size_t>(tokens * kHeads * kHeadDim), 0.1f);
  std::vector<float> out(q.size());
  std::vector<int32_t> pos(static_cast<size_t>(tokens));
  std::iota(pos.begin(), pos.end(), 0);
  AttentionParams params{kHeads, 0.125f};
  params.online_softmax = state.range(1) != 0;
  for (auto _ : state) {
    pagoda::kernels::paged_attention(q.data(), tokens, pos.data(), s.view, s.tables[0], params,
                                     out.data());
    benchmark::ClobberMemory();
  }
  state.counters["tok/s"] = benchmark::Counter(static_cast<double>(state.iterations() * tokens),
                                               benchmark::Counter::kIsRate);
  state.SetLabel(std::string(pagoda::kernels::isa_name(pagoda::kernels::active_isa())) +
                 (params.online_softmax ? " online" : " exact"));
}

// Args: context, sequences, cache type (0 F16, 1 BF16, 2 Q8_0), online softmax (0 exact, 1 online).
BENCHMARK(BM_AttentionDecode)
    ->ArgsProduct({{64, 512, 4096}, {1}, {0, 1, 2}, {0, 1}})
    ->ArgsProduct({{512}, {16}, {0, 1, 2}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_AttentionPrefill)
    ->ArgsProduct({{512}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
