// The AVX-512 (F, BW, VL, VNNI) kernel table. The tiles are AVX2's (8 rows, 256-bit vectors); VNNI
// replaces the maddubs + madd pair of int8 dot products with one vpdpbusd, and the kernels that
// take two tiles at once (decode_pair, packed_gemm_pairs, GemmLegacy) hold them in one 512-bit
// vector (Zen 4 executes 512-bit ops as two halves: half the instructions). The shared x86 sources
// (x86_*.inc) are compiled here for this ISA: every header is included first, then the functions
// below get the target attributes (so nothing from std:: or other headers is compiled for AVX-512
// and the library still loads on any x86-64 CPU; isa.cc only selects this table when the CPU has
// the features).
#include "kernels/cpu/kernel_table.h"

#if defined(__x86_64__)
// GCC 12's 512-bit intrinsics start from _mm512_undefined_*() and warn "(may be) used
// uninitialized" where they are inlined (GCC bug 105593, fixed in 13); the warning points into the
// header.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "base/check.h"

#include "hwy/base.h"
#include "kernels/cpu/block_layouts.h"
#include "kernels/cpu/packed_layout.h"
#include "kernels/cpu/softmax_exp.h"
#include "kernels/cpu/sum_squares.h"
#include "tensor/float16.h"

#define PAGODA_X86_VNNI 1

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
namespace pagoda::kernels::cpu::avx512 {
namespace {
// Order matters: each file uses the ones before it.
// clang-format off
#include "kernels/cpu/x86/x86_common.inc"
#include "kernels/cpu/x86/x86_elementwise.inc"
#include "kernels/cpu/x86/x86_lora.inc"
#include "kernels/cpu/x86/x86_matmul_q.inc"
#include "kernels/cpu/x86/x86_matmul_panel.inc"
#include "kernels/cpu/x86/x86_panel_legacy.inc"
#include "kernels/cpu/x86/x86_panel_q23_k.inc"
#include "kernels/cpu/x86/x86_gemm.inc"
#include "kernels/cpu/x86/x86_gemm_legacy.inc"
#include "kernels/cpu/x86/x86_gemm_k.inc"
#include "kernels/cpu/x86/x86_matmul_f.inc"
#include "kernels/cpu/x86/x86_attention.inc"
// clang-format on
}  // namespace
}  // namespace pagoda::kernels::cpu::avx512
HWY_POP_ATTRIBUTES

// The AMX GEMM (the amx table) under the same target plus the tile instructions; it calls the
// kernels above for what the tiles do not cover.
HWY_PUSH_ATTRIBUTES(
    "avx2,fma,f16c,bmi,bmi2,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,amx-tile,"
    "amx-int8")
namespace pagoda::kernels::cpu::avx512 {
namespace {
#include "kernels/cpu/x86/x86_gemm_amx.inc"
}  // namespace
}  // namespace pagoda::kernels::cpu::avx512
HWY_POP_ATTRIBUTES

namespace pagoda::kernels::cpu {
const CpuKernels* avx512_kernels() {
  static const CpuKernels table = [] {
    CpuKernels k;
    k.isa = Isa::kAvx512;
    k.quantize_acts = &avx512::quantize_acts;
    k.group_acts_bytes = &avx512::group_acts_bytes;
    k.group_acts = &avx512::group_acts;
    k.reads_packed = true;
    k.matmul_rows = &avx512::matmul_for;
    k.decode_tokens = &avx512::decode_tokens;
    k.attention_item = &avx512::attention_item;
    k.sum_u64 = &avx512::sum_u64;
    k.silu_mul = &avx512::silu_mul;
    k.rms_norm = &avx512::rms_norm;
    k.add_inplace = &avx512::add_inplace;
    k.lora_expand = &avx512::lora_expand;
    k.fp32_to_f16_row = &avx512::fp32_to_f16_row;
    return k;
  }();
  return &table;
}
const CpuKernels* amx_kernels() {
  static const CpuKernels table = [] {
    CpuKernels k = *avx512_kernels();
    k.isa = Isa::kAmx;
    k.group_acts_bytes = &avx512::group_acts_bytes_amx;
    k.group_acts = &avx512::group_acts_amx;
    k.matmul_rows = &avx512::matmul_for_amx;
    k.decode_tokens = &avx512::decode_tokens_amx;
    return k;
  }();
  return &table;
}
}  // namespace pagoda::kernels::cpu

#else
namespace pagoda::kernels::cpu {
const CpuKernels* avx512_kernels() {
  return nullptr;
}
const CpuKernels* amx_kernels() {
  return nullptr;
}
}  // namespace pagoda::kernels::cpu
#endif
