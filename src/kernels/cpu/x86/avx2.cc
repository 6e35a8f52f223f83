// The AVX2 + FMA + F16C kernel table. The shared x86 sources (x86_*.inc) are compiled here for
// this ISA: every header is included first, then the functions below get the target attributes
// (so nothing from std:: or other headers is compiled for AVX2 and the library still loads on any
// x86-64 CPU; isa.cc only selects this table when the CPU has the features).
#include "kernels/cpu/kernel_table.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
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

#define PAGODA_X86_VNNI 0

HWY_PUSH_ATTRIBUTES("avx2,fma,f16c,bmi,bmi2")
namespace pagoda::kernels::cpu::avx2 {
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
}  // namespace pagoda::kernels::cpu::avx2
HWY_POP_ATTRIBUTES

namespace pagoda::kernels::cpu {
const CpuKernels* avx2_kernels() {
  static const CpuKernels table = [] {
    CpuKernels k;
    k.isa = Isa::kAvx2;
    k.quantize_acts = &avx2::quantize_acts;
    k.reads_packed = true;
    k.matmul_rows = &avx2::matmul_for;
    k.attention_item = &avx2::attention_item;
    k.sum_u64 = &avx2::sum_u64;
    k.silu_mul = &avx2::silu_mul;
    k.rms_norm = &avx2::rms_norm;
    k.add_inplace = &avx2::add_inplace;
    k.lora_expand = &avx2::lora_expand;
    k.fp32_to_f16_row = &avx2::fp32_to_f16_row;
    return k;
  }();
  return &table;
}
}  // namespace pagoda::kernels::cpu

#else
namespace pagoda::kernels::cpu {
const CpuKernels* avx2_kernels() {
  return nullptr;
}
}  // namespace pagoda::kernels::cpu
#endif
