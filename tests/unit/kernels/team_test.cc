// kernels/team.h: a chain of ops run on one team (one parallel region, lazy barriers) gives the
// same bits as the same ops called one by one, on every ISA path, for decode (1 token), a few
// tokens and a batch large enough that every op splits; what team_first writes reaches the ops
// and, after team_sync, every thread.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "isa_guard.h"
#include "kernels/attention.h"
#include "kernels/ops.h"
#include "kernels/quant.h"
#include "kernels/team.h"
#include "random_data.h"
#include "tensor/dtype.h"

namespace pagoda::kernels {
namespace {

using tensor::DType;

// A quantised weight and, where the active ISA has one, its pre-packed copy (the decode path).
struct Weight {
  std::vector<uint8_t> bytes, packed;
  WeightView view;
};

Weight make_weight(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  const auto f = random_vec(static_cast<size_t>(rows * cols), seed, 0.5f);
  const size_t row_bytes = *tensor::row_size_bytes(dtype, static_cast<uint64_t>(cols));
  Weight w;
  w.bytes.resize(row_bytes * static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(dtype, f.data() + r * cols, w.bytes.data() + r * row_bytes, cols);
  w.view = WeightView{dtype, rows, cols, row_bytes, w.bytes.data()};
  w.packed = pack_weight(w.view);
  if (!w.packed.empty()) w.view.packed = w.packed.data();
  return w;
}

// A miniature transformer layer: heads of 64, 4 query heads over 2 KV heads, a 256-wide model.
struct Layer {
  static constexpr int64_t kHidden = 256, kHeads = 4, kKvHeads = 2, kHeadDim = 64, kFfn = 1024;
  Weight wq = make_weight(DType::kQ4_K, kHeads* kHeadDim, kHidden, 1);
  Weight wk = make_weight(DType::kQ6_K, kKvHeads* kHeadDim, kHidden, 2);
  Weight wv = make_weight(DType::kQ8_0, kKvHeads* kHeadDim, kHidden, 3);
  Weight wo = make_weight(DType::kQ4_0, kHidden, kHeads* kHeadDim, 4);
  Weight gate = make_weight(DType::kQ4_K, kFfn, kHidden, 5);
  Weight up = make_weight(DType::kQ4_K, kFfn, kHidden, 6);
  Weight down = make_weight(DType::kQ6_K, kHidden, kFfn, 7);
  std::vector<float> norm = random_vec(kHidden, 8);
};

// A layer's buffers and its paged KV cache (f16), for `seqs` sequences of 2 x `tokens` tokens.
struct State {
  static constexpr int32_t kBlock = 16;
  int64_t seqs, tokens;
  std::vector<float> x, h, q, k, v, attn, out, g, u, probs;
  std::vector<uint8_t> kv_k, kv_v;
  KvLayerView kv;
  std::vector<std::vector<int32_t>> tables;

  State(int64_t num_seqs, int64_t num_tokens) : seqs(num_seqs), tokens(num_tokens) {
    const int64_t T = seqs * tokens;
    const int64_t H = Layer::kHidden, q_dim = Layer::kHeads * Layer::kHeadDim;
    const int64_t kv_dim = Layer::kKvHeads * Layer::kHeadDim;
    const int64_t blocks_per_seq = (2 * tokens + kBlock - 1) / kBlock;
    x = random_vec(static_cast<size_t>(T * H), 9);
    for (auto* b : {&h, &out, &probs})
      b->resize(static_cast<size_t>(T * H));
    for (auto* b : {&q, &attn})
      b->resize(static_cast<size_t>(T * q_dim));
    for (auto* b : {&k, &v})
      b->resize(static_cast<size_t>(T * kv_dim));
    for (auto* b : {&g, &u})
      b->resize(static_cast<size_t>(T * Layer::kFfn));
    kv = KvLayerView{DType::kF16,           kBlock,  Layer::kKvHeads, Layer::kHeadDim,
                     seqs * blocks_per_seq, nullptr, nullptr};
    const size_t cache_bytes =
        static_cast<size_t>(kv.num_blocks * kBlock * kv_dim) * sizeof(uint16_t);
    kv_k.assign(cache_bytes, 0);
    kv_v.assign(cache_bytes, 0);
    kv.k = kv_k.data();
    kv.v = kv_v.data();
    tables.resize(static_cast<size_t>(seqs));
    for (int64_t i = 0; i < seqs; ++i) {
      auto& table = tables[static_cast<size_t>(i)];
      table.resize(static_cast<size_t>(blocks_per_seq));
      std::iota(table.begin(), table.end(), static_cast<int32_t>(i * blocks_per_seq));
    }
  }
};

// Two passes of the layer over s.tokens new tokens of each sequence (the second attends to the
// first's cache), then a softmax of the output: every op of a forward pass. On a team every
// thread runs this on the same State.
void run_layer(const Layer& L, State& s) {
  const int64_t T = s.seqs * s.tokens, tokens = s.tokens;
  const int64_t H = Layer::kHidden, q_dim = Layer::kHeads * Layer::kHeadDim;
  const int64_t kv_dim = Layer::kKvHeads * Layer::kHeadDim;
  const KvLayerView& kv = s.kv;
  RopeParams rope;
  rope.rot_dims = Layer::kHeadDim;
  AttentionParams params;
  params.n_heads = Layer::kHeads;
  params.scale = 0.125f;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<int32_t> positions(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t)
      positions[static_cast<size_t>(t)] = static_cast<int32_t>(pass * tokens + t % tokens);
    rms_norm(s.x.data(), L.norm.data(), T, H, 1e-5f, s.h.data());
    const MatmulJob qkv[] = {
        {&L.wq.view, s.q.data(), nullptr},
        {&L.wk.view, s.k.data(), nullptr},
        {&L.wv.view, s.v.data(), nullptr},
    };
    matmul_group(qkv, s.h.data(), T);
    kernels::rope(s.q.data(), T, Layer::kHeads, Layer::kHeadDim, positions.data(), rope);
    kernels::rope(s.k.data(), T, Layer::kKvHeads, Layer::kHeadDim, positions.data(), rope);
    std::vector<AttentionSequence> batch;
    for (int64_t i = 0; i < s.seqs; ++i) {
      const int64_t b = i * tokens;
      const int32_t* pos = positions.data() + b;
      kv_cache_write(kv, s.tables[static_cast<size_t>(i)], pos, tokens, s.k.data() + b * kv_dim,
                     s.v.data() + b * kv_dim);
      batch.push_back({s.q.data() + b * q_dim, s.attn.data() + b * q_dim, pos, tokens,
                       s.tables[static_cast<size_t>(i)]});
    }
    paged_attention_batch(batch, kv, params);
    matmul(L.wo.view, s.attn.data(), T, s.out.data());
    add_inplace(s.x.data(), s.out.data(), T * H);
    rms_norm(s.x.data(), L.norm.data(), T, H, 1e-5f, s.h.data());
    const MatmulJob gate_up[] = {{&L.gate.view, s.g.data(), nullptr},
                                 {&L.up.view, s.u.data(), nullptr}};
    matmul_group(gate_up, s.h.data(), T);
    silu_mul(s.g.data(), s.u.data(), T * Layer::kFfn, s.g.data());
    matmul(L.down.view, s.g.data(), T, s.out.data());
    add_inplace(s.x.data(), s.out.data(), T * H);
  }
  team_first([&] { std::copy(s.x.begin(), s.x.end(), s.probs.begin()); });
  softmax(s.probs.data(), T, H);
}

TEST(TeamTest, LayerOnATeamEqualsOpByOpBitForBit) {
  const Layer layer;
  struct Shape {
    int64_t seqs, tokens;
  };
  // Decode of one and of 5 sequences (the decode and the dynamic matmul split, ops on the first
  // thread), and 2 x 40-token prefill chunks (every op split, the activations converted by all).
  for (const Shape shape : {Shape{1, 1}, Shape{5, 1}, Shape{2, 40}}) {
    for (Isa isa : supported_isas()) {
      IsaGuard guard(isa);
      for (int threads : {2, 3}) {
        ThreadsGuard tg(threads);
        State alone(shape.seqs, shape.tokens), teamed(shape.seqs, shape.tokens);
        run_layer(layer, alone);
        run_in_team([&] { run_layer(layer, teamed); });
        for (size_t i = 0; i < alone.x.size(); ++i) {
          ASSERT_EQ(teamed.x[i], alone.x[i])
              << isa_name(isa) << " threads " << threads << " seqs " << shape.seqs << " tokens "
              << shape.tokens << " at " << i;
        }
        ASSERT_EQ(teamed.probs, alone.probs) << isa_name(isa) << " threads " << threads;
      }
    }
  }
}

TEST(TeamTest, FirstThreadWritesReachOpsAndSyncedThreads) {
  ThreadsGuard tg(3);
  EXPECT_FALSE(in_team());
  constexpr int64_t kN = 1 << 20;  // an add this long splits across the threads
  std::vector<float> a(kN), b(kN);
  std::vector<int> seen(3, -1);
  int threads = 0;
  run_in_team([&] {
    EXPECT_TRUE(in_team());
    team_first([&] {
      threads = omp_get_num_threads();
      std::fill(a.begin(), a.end(), 1.0f);
      std::iota(b.begin(), b.end(), 0.0f);
    });
    add_inplace(a.data(), b.data(), kN);  // every thread adds a slice of what the first wrote
    team_sync();
    // Every thread now reads the whole sum; each reports whether it is right.
    bool ok = true;
    for (int64_t i = 0; i < kN; i += 4099)
      ok = ok && a[static_cast<size_t>(i)] == static_cast<float>(i) + 1.0f;
    seen[static_cast<size_t>(omp_get_thread_num())] = ok ? 1 : 0;
  });
  EXPECT_FALSE(in_team());
  for (int64_t i = 0; i < kN; ++i)
    ASSERT_EQ(a[static_cast<size_t>(i)], static_cast<float>(i) + 1.0f) << i;
  EXPECT_EQ(threads, 3);
  for (int r = 0; r < threads; ++r)
    EXPECT_EQ(seen[static_cast<size_t>(r)], 1) << "thread " << r;
}

// Ops size their work by the team, which every thread sees alike: a thread count changed while a
// pass runs (a precondition violation, but not one that may hang a pass) does not split the
// threads' paths.
TEST(TeamTest, ThreadCountChangedDuringAPassDoesNotSplitTheTeam) {
  ThreadsGuard tg(2);
  constexpr int64_t kN = 1 << 20;
  std::vector<float> a(kN, 1.0f), b(kN, 2.0f);
  run_in_team([&] {
    team_first([] { set_num_threads(1); });
    add_inplace(a.data(), b.data(), kN);
    team_first([] { set_num_threads(2); });
    add_inplace(a.data(), b.data(), kN);
  });
  for (int64_t i = 0; i < kN; i += 997)
    ASSERT_EQ(a[static_cast<size_t>(i)], 5.0f) << i;
}

}  // namespace
}  // namespace pagoda::kernels
