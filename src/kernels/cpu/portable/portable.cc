// The portable kernel table: Highway's static target for this build, which is NEON on AArch64
// (and Highway's one-lane scalar target on a baseline x86-64 build, where it is only a test path:
// the x86 tables are faster there). Int8 dots for the Q4_0, Q8_0, Q4_K, Q5_K and Q6_K matmuls
// (the types quantised models, the Q4_K_M and Q5_K_M mixes included, spend their decode in): each
// weight row is decoded once to signed bytes with vector nibble and bit operations, then dotted per
// block or sub-block with a widening multiply-accumulate. The float sequence is the reference's
// (vec_dot_ref.cc): the exact integer sums, then its fmas in block order, so the bits are the
// same. Also the bandwidth probe's sum. Every other entry falls back to the scalar reference
// (silu_mul too: Highway's MulAdd is not fused on the emulated targets, and silu's bits are
// defined by fma).
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "hwy/highway.h"
#include "kernels/cpu/block_layouts.h"
#include "kernels/cpu/kernel_table.h"
#include "kernels/cpu/reference/ops_ref.h"
#include "tensor/float16.h"

// Our functions get the static target's attributes too (Highway's ops carry them: NEON's need
// them to inline).
HWY_BEFORE_NAMESPACE();
namespace pagoda::kernels::cpu::portable {
namespace {

namespace hn = hwy::HWY_NAMESPACE;

// Σ w[j] · x[j] for j < n (a multiple of the int16 lane count: 16 and 32 are), exact: int8
// widened to int16, products summed in int32 (ReorderWidenMulAccumulate: NEON smlal pairs).
int32_t dot_i8(const int8_t* w, const int8_t* x, size_t n) {
  const hn::ScalableTag<int16_t> d16;
  const hn::Rebind<int8_t, decltype(d16)> d8;
  const hn::RepartitionToWide<decltype(d16)> d32;
  auto sum0 = hn::Zero(d32), sum1 = hn::Zero(d32);
  const size_t step = hn::Lanes(d16);
  for (size_t j = 0; j < n; j += step) {
    const auto wv = hn::PromoteTo(d16, hn::LoadU(d8, w + j));
    const auto xv = hn::PromoteTo(d16, hn::LoadU(d8, x + j));
    sum0 = hn::ReorderWidenMulAccumulate(d32, wv, xv, sum0, sum1);
  }
  return hn::GetLane(hn::SumOfLanes(d32, hn::Add(sum0, sum1)));
}

// Bytes [0, n) of `src` split into nibbles minus `offset`: low ones to lo[j], high ones to hi[j]
// (as int8).
void split_nibbles(const uint8_t* src, size_t n, int8_t offset, int8_t* lo, int8_t* hi) {
  const hn::ScalableTag<uint8_t> du;
  const hn::Rebind<int8_t, decltype(du)> di;
  const auto m4 = hn::Set(du, 0x0F);
  const auto off = hn::Set(di, offset);
  for (size_t j = 0; j < n; j += hn::Lanes(du)) {
    const auto v = hn::LoadU(du, src + j);
    hn::StoreU(hn::Sub(hn::BitCast(di, hn::And(v, m4)), off), di, lo + j);
    hn::StoreU(hn::Sub(hn::BitCast(di, hn::ShiftRight<4>(v)), off), di, hi + j);
  }
}

// One weight row's levels as signed bytes (Q4_0: level - 8) and its block scales as floats.
void decode_row(tensor::DType t, const uint8_t* row, int64_t nb, int8_t* q, float* d) {
  if (t == tensor::DType::kQ8_0) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ8_0 blk;
      std::memcpy(&blk, row + b * sizeof(BlockQ8_0), sizeof(blk));
      d[b] = tensor::fp16_to_fp32(blk.d);
      std::memcpy(q + b * kQK, blk.qs, kQK);
    }
    return;
  }
  // Q4_0: byte j holds element j (low nibble) and element j + 16 (high), offset 8.
  for (int64_t b = 0; b < nb; ++b) {
    BlockQ4_0 blk;
    std::memcpy(&blk, row + b * sizeof(BlockQ4_0), sizeof(blk));
    d[b] = tensor::fp16_to_fp32(blk.d);
    split_nibbles(blk.qs, kQK / 2, 8, q + b * kQK, q + b * kQK + kQK / 2);
  }
}

// The reference's matmul_rows for Q4_0 / Q8_0 weights (Q8_0 activations): each row decoded once,
// then dotted with every token's row.
void matmul_q8_blocks(const WeightView& w, const ActLayout& l, const uint8_t* acts, int64_t m,
                      const float* bias, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const int64_t nb = w.cols / kQK;
  thread_local std::vector<int8_t> q;
  thread_local std::vector<float> d;
  q.resize(static_cast<size_t>(w.cols));
  d.resize(static_cast<size_t>(nb));
  for (int64_t r = r0; r < r1; ++r) {
    decode_row(w.dtype, w.row(r), nb, q.data(), d.data());
    for (int64_t i = 0; i < m; ++i) {
      const ActRow a = act_row(l, acts + static_cast<size_t>(i) * l.row_bytes);
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const int32_t isum = dot_i8(q.data() + b * kQK, a.qs + b * kQK, kQK);
        acc = std::fma(static_cast<float>(isum), d[static_cast<size_t>(b)] * a.d[b], acc);
      }
      if (bias != nullptr) acc += bias[r];
      y[i * ldy + r] = acc;
    }
  }
}

// A K-quant super-block as the reference's dot_k reads it: signed levels q[256] (offsets
// applied), per sub-block scales and mins, the super-scales.
struct Super {
  int8_t q[kQK_K];
  int32_t scale[16];
  int32_t min[16];
  int32_t sub;  // elements per sub-block
  float d, dmin;
};

// Q4_K, and Q5_K with its fifth bits: element 64c + r takes the low (r < 32) or high nibble of
// qs[32c + r % 32] and, for Q5_K, bit 2c (r < 32) or 2c + 1 of qh[r % 32] as its bit 4.
template <int C>
void q5_k_fifth_bits(const uint8_t* qh, int8_t* lo, int8_t* hi) {
  const hn::ScalableTag<uint8_t> du;
  const hn::Rebind<int8_t, decltype(du)> di;
  const auto one = hn::Set(du, 1);
  for (size_t j = 0; j < 32; j += hn::Lanes(du)) {
    const auto h = hn::LoadU(du, qh + j);
    const auto b0 = hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2 * C>(h), one));
    const auto b1 = hn::ShiftLeft<4>(hn::And(hn::ShiftRight<2 * C + 1>(h), one));
    hn::StoreU(hn::Or(hn::LoadU(di, lo + j), hn::BitCast(di, b0)), di, lo + j);
    hn::StoreU(hn::Or(hn::LoadU(di, hi + j), hn::BitCast(di, b1)), di, hi + j);
  }
}

template <bool kQ5>
void decode_q45_k(const uint8_t* src, Super& s) {
  using Block = std::conditional_t<kQ5, BlockQ5_K, BlockQ4_K>;
  Block blk;
  std::memcpy(&blk, src, sizeof(blk));
  s.sub = 32;
  s.d = tensor::fp16_to_fp32(blk.d);
  s.dmin = tensor::fp16_to_fp32(blk.dmin);
  for (int c = 0; c < 4; ++c)
    split_nibbles(blk.qs + 32 * c, 32, 0, s.q + 64 * c, s.q + 64 * c + 32);
  if constexpr (kQ5) {
    q5_k_fifth_bits<0>(blk.qh, s.q, s.q + 32);
    q5_k_fifth_bits<1>(blk.qh, s.q + 64, s.q + 96);
    q5_k_fifth_bits<2>(blk.qh, s.q + 128, s.q + 160);
    q5_k_fifth_bits<3>(blk.qh, s.q + 192, s.q + 224);
  }
  for (int j = 0; j < 8; ++j) {
    uint8_t sc, mn;
    k4_scale_min(j, blk.scales, &sc, &mn);
    s.scale[j] = sc;
    s.min[j] = mn;
  }
}

// Q6_K element 128h + 32k + l: low 4 bits from ql[64h + 32(k & 1) + l] (low nibble for k < 2),
// high 2 bits at 2k of qh[32h + l], minus 32.
template <int K>
void q6_k_quarter(const uint8_t* ql, const uint8_t* qh, int8_t* out) {
  const hn::ScalableTag<uint8_t> du;
  const hn::Rebind<int8_t, decltype(du)> di;
  const auto m4 = hn::Set(du, 0x0F), m3 = hn::Set(du, 3);
  const auto offset = hn::Set(di, 32);
  for (size_t l = 0; l < 32; l += hn::Lanes(du)) {
    const auto lb = hn::LoadU(du, ql + 32 * (K & 1) + l);
    const auto low = K < 2 ? hn::And(lb, m4) : hn::ShiftRight<4>(lb);
    const auto high = hn::And(hn::ShiftRight<2 * K>(hn::LoadU(du, qh + l)), m3);
    const auto v = hn::BitCast(di, hn::Or(low, hn::ShiftLeft<4>(high)));
    hn::StoreU(hn::Sub(v, offset), di, out + 32 * K + l);
  }
}

void decode_q6_k(const uint8_t* src, Super& s) {
  BlockQ6_K blk;
  std::memcpy(&blk, src, sizeof(blk));
  s.sub = 16;
  s.d = tensor::fp16_to_fp32(blk.d);
  s.dmin = 0;
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = blk.ql + 64 * h;
    const uint8_t* qh = blk.qh + 32 * h;
    int8_t* out = s.q + 128 * h;
    q6_k_quarter<0>(ql, qh, out);
    q6_k_quarter<1>(ql, qh, out);
    q6_k_quarter<2>(ql, qh, out);
    q6_k_quarter<3>(ql, qh, out);
  }
  for (int j = 0; j < 16; ++j) {
    s.scale[j] = blk.scales[j];
    s.min[j] = 0;
  }
}

// The reference's matmul_rows for Q4_K / Q5_K / Q6_K weights (Q8_K activations): each row's
// super-blocks decoded once, then dotted with every token's row in dot_k's sequence.
void matmul_k(const WeightView& w, const ActLayout& l, const uint8_t* acts, int64_t m,
              const float* bias, float* y, int64_t ldy, int64_t r0, int64_t r1) {
  const tensor::DType t = w.dtype;
  const bool with_min = t != tensor::DType::kQ6_K;
  const int64_t nb = w.cols / kQK_K;
  const size_t block_bytes = t == tensor::DType::kQ4_K   ? sizeof(BlockQ4_K)
                             : t == tensor::DType::kQ5_K ? sizeof(BlockQ5_K)
                                                         : sizeof(BlockQ6_K);
  thread_local std::vector<Super> supers;
  supers.resize(static_cast<size_t>(nb));
  for (int64_t r = r0; r < r1; ++r) {
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* src = w.row(r) + static_cast<size_t>(b) * block_bytes;
      Super& s = supers[static_cast<size_t>(b)];
      if (t == tensor::DType::kQ4_K) {
        decode_q45_k<false>(src, s);
      } else if (t == tensor::DType::kQ5_K) {
        decode_q45_k<true>(src, s);
      } else {
        decode_q6_k(src, s);
      }
    }
    for (int64_t i = 0; i < m; ++i) {
      const ActRow a = act_row(l, acts + static_cast<size_t>(i) * l.row_bytes);
      float acc = 0;
      for (int64_t b = 0; b < nb; ++b) {
        const Super& s = supers[static_cast<size_t>(b)];
        const int8_t* xq = a.qs + b * kQK_K;
        const int16_t* bsums = a.sums + b * 16;
        int32_t isum = 0, msum = 0;
        for (int32_t j = 0; j < kQK_K / s.sub; ++j) {
          isum += s.scale[j] * dot_i8(s.q + j * s.sub, xq + j * s.sub, static_cast<size_t>(s.sub));
          int32_t bsum = 0;
          for (int32_t k = j * s.sub / 16; k < (j + 1) * s.sub / 16; ++k)
            bsum += bsums[k];
          msum += s.min[j] * bsum;
        }
        acc = std::fma(static_cast<float>(isum), s.d * a.d[b], acc);
        if (with_min) acc = std::fma(static_cast<float>(-msum), s.dmin * a.d[b], acc);
      }
      if (bias != nullptr) acc += bias[r];
      y[i * ldy + r] = acc;
    }
  }
}

// The bandwidth probe's sum (wrapping), four vector accumulators.
uint64_t sum_u64(const uint64_t* p, size_t n) {
  const hn::ScalableTag<uint64_t> d;
  const size_t lanes = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  size_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = hn::Add(a0, hn::LoadU(d, p + i));
    a1 = hn::Add(a1, hn::LoadU(d, p + i + lanes));
    a2 = hn::Add(a2, hn::LoadU(d, p + i + 2 * lanes));
    a3 = hn::Add(a3, hn::LoadU(d, p + i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes)
    a0 = hn::Add(a0, hn::LoadU(d, p + i));
  uint64_t s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i)
    s += p[i];
  return s;
}

MatmulRowsFn matmul_for(tensor::DType t) {
  switch (t) {
    case tensor::DType::kQ4_0:
    case tensor::DType::kQ8_0:
      return &matmul_q8_blocks;
    case tensor::DType::kQ4_K:
    case tensor::DType::kQ5_K:
    case tensor::DType::kQ6_K:
      return &matmul_k;
    default:
      return nullptr;
  }
}

}  // namespace
}  // namespace pagoda::kernels::cpu::portable
HWY_AFTER_NAMESPACE();

namespace pagoda::kernels::cpu {

const CpuKernels* portable_kernels() {
  static const CpuKernels table = [] {
    CpuKernels k;
    k.isa = Isa::kPortable;
    k.quantize_acts = &reference::quantize_acts;
    k.matmul_rows = &portable::matmul_for;
    k.sum_u64 = &portable::sum_u64;
    return k;
  }();
  return &table;
}

}  // namespace pagoda::kernels::cpu
