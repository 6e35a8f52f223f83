// The portable kernel table: Highway's static target for this build, which is NEON on AArch64
// (and 128-bit emulation on a baseline x86-64 build, where it is only a test path: the x86
// tables are faster there). Int8 block dots for the Q4_0 and Q8_0 matmuls, the types a
// quantised model spends its decode in, and the bandwidth probe's sum; every other entry falls
// back to the scalar reference (silu_mul too: Highway's MulAdd is not fused on the emulated
// target, and silu's bits are defined by fma).
// The float sequence is the reference's (vec_dot_ref.cc): per block, the exact integer sum, then
// acc = fma(float(isum), dw * dx, acc) in block order, so the bits are the same.
#include <cmath>
#include <cstring>
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

// Σ w[j] · x[j] over one 32-element block, exact: int8 widened to int16, products summed in
// int32 (ReorderWidenMulAccumulate: NEON smlal pairs).
int32_t block_dot(const int8_t* w, const int8_t* x) {
  const hn::ScalableTag<int16_t> d16;
  const hn::Rebind<int8_t, decltype(d16)> d8;
  const hn::RepartitionToWide<decltype(d16)> d32;
  auto sum0 = hn::Zero(d32), sum1 = hn::Zero(d32);
  const size_t step = hn::Lanes(d16);
  for (size_t j = 0; j < static_cast<size_t>(kQK); j += step) {
    const auto wv = hn::PromoteTo(d16, hn::LoadU(d8, w + j));
    const auto xv = hn::PromoteTo(d16, hn::LoadU(d8, x + j));
    sum0 = hn::ReorderWidenMulAccumulate(d32, wv, xv, sum0, sum1);
  }
  return hn::GetLane(hn::SumOfLanes(d32, hn::Add(sum0, sum1)));
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
  // Q4_0: byte j holds element j (low nibble) and element j + 16 (high).
  const hn::ScalableTag<uint8_t> du;
  const hn::Rebind<int8_t, decltype(du)> di;
  const size_t step = hn::Lanes(du);
  const auto m4 = hn::Set(du, 0x0F);
  const auto eight = hn::Set(di, 8);
  for (int64_t b = 0; b < nb; ++b) {
    BlockQ4_0 blk;
    std::memcpy(&blk, row + b * sizeof(BlockQ4_0), sizeof(blk));
    d[b] = tensor::fp16_to_fp32(blk.d);
    int8_t* out = q + b * kQK;
    for (size_t j = 0; j < static_cast<size_t>(kQK / 2); j += step) {
      const auto v = hn::LoadU(du, blk.qs + j);
      const auto lo = hn::BitCast(di, hn::And(v, m4));
      const auto hi = hn::BitCast(di, hn::ShiftRight<4>(v));
      hn::StoreU(hn::Sub(lo, eight), di, out + j);
      hn::StoreU(hn::Sub(hi, eight), di, out + kQK / 2 + j);
    }
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
        const int32_t isum = block_dot(q.data() + b * kQK, a.qs + b * kQK);
        acc = std::fma(static_cast<float>(isum), d[static_cast<size_t>(b)] * a.d[b], acc);
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
  return t == tensor::DType::kQ4_0 || t == tensor::DType::kQ8_0 ? &matmul_q8_blocks : nullptr;
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
